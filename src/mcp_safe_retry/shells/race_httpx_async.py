"""Hedged reads in the async httpx shell: the copies of one call raced in a task group.

It carries out what ``core.hedging.Hedging`` answers and decides nothing. Each copy runs in
a task of its own, in a cancel scope of its own, and reports what it met; a loser's scope is
cancelled, its response closed (on 2026-07-28 that is the cancellation) and, on a 2025
session, the ``notifications/cancelled`` the core built for the loser's own id is POSTed,
shielded, within the loser's time limit. Cancelling the caller cancels every copy. The
breaker and the budget are asked what the core says to ask them (``Ask``):
awaited, never blocking the event loop, before the first copy, before a hedge, and before
a retry.

An SSE answer commits the call to its copy as soon as its 2xx head arrives (the others are
cancelled then): a transport hands one response on, and cannot hand on a stream while other
copies might still win.

Hand-written; ``scripts/unasync.py`` generates its httpx2 twin. Sync shells refuse hedging
(``wiring.no_race``): a copy blocked in a read in another thread cannot be cancelled.
"""

from __future__ import annotations

import anyio
import anyio.abc
import httpx

from ..core.commands import Ask, Command, Launch, Loser, Turn
from ..core.events import Head
from ..core.hedging import CARRIED_ON, Hedging, carries_on
from .bodies_httpx_async import Ended, Executor, edited, head_of, read_whole, with_body
from .errors_httpx import describe_error

__all__ = ["CANCELLED_BY_CALLER", "race"]

_Answer = tuple[httpx.Response, Head, bytes | None]  # a copy's response, head and body read

CANCELLED_BY_CALLER = "the caller cancelled the request (notifications/cancelled)"


async def race(request: httpx.Request, hedging: Hedging, executor: Executor) -> Ended:
    """Run the copies of a hedged call until one settles it; what ends the exchange.

    A copy may settle the call with a command that does not end the exchange (a session
    renewal after its 404): ``executor`` (the shell's one loop) carries that on, unhedged.
    """
    racing = _Racing(request, hedging, executor)
    hedging.watch(racing.cancelled_by_caller)
    try:
        with racing.scope:
            async with anyio.create_task_group() as tasks:
                racing.tasks = tasks
                await racing.run()
    except BaseException:
        await racing.abandon()  # cancelled, or an error of the inner transport's own
        raise
    finally:
        hedging.watch(None)
    if racing.ended is None:
        await racing.abandon()
        raise racing.crash or httpx.ReadError(CANCELLED_BY_CALLER, request=request)
    command = racing.ended.command
    if carries_on(command):
        return await executor.run(hedging.call, request, Ended(command))
    return racing.ended


class _Racing:
    """One race's tasks and the responses they hold."""

    tasks: anyio.abc.TaskGroup

    def __init__(self, request: httpx.Request, hedging: Hedging, executor: Executor) -> None:
        self._request = request
        self._hedging = hedging
        self._executor = executor
        self._scopes: dict[int, anyio.CancelScope] = {}
        self._changed = anyio.Event()
        self.scope = anyio.CancelScope()  # the race's own: the caller may cancel it
        self.ended: Ended | None = None
        self.crash: Exception | None = None
        self._asking: anyio.CancelScope | None = None  # while a hedge's budget or breaker is asked

    async def run(self) -> None:
        """Start the first copy, send hedges when they are due, stop once a copy settles."""
        hedging = self._hedging
        await self._report(hedging.start())  # the breaker may hold the first copy back
        while self.ended is None and self.crash is None:
            changed = self._changed = anyio.Event()
            with anyio.move_on_after(hedging.wait()):
                await changed.wait()
            if not changed.is_set():
                await self._hedge()

    async def _hedge(self) -> None:
        """Send a hedge if one is due and the budget and the breaker allow it (awaited when
        the core says to ask them); a copy that settles the call meanwhile stops the asking."""
        hedging = self._hedging
        ask = hedging.hedge()
        with anyio.CancelScope() as self._asking:
            while isinstance(ask, Ask):
                ask = hedging.hedge_answered(await ask.allow_async())
        self._asking = None
        if isinstance(ask, Launch):
            self._launch(ask)
        else:  # none, or stopped asking: a token taken for it goes back
            hedging.hedge_unsent()

    def cancelled_by_caller(self) -> None:
        """The caller's own ``notifications/cancelled`` named this call: stop every copy."""
        self.scope.cancel()

    async def abandon(self) -> None:
        """The race ends without an answer: cancel every copy still in flight."""
        if self.ended is not None:
            await self._close(self.ended.response)
            self.ended = None
        turn = self._hedging.abandon()
        limit = self._hedging.cancel_time_limit
        with anyio.CancelScope(shield=True), anyio.move_on_after(limit):
            for loser in turn.cancel:
                await self._notify(loser)

    def _launch(self, launch: Launch) -> None:
        scope = self._scopes[launch.number] = anyio.CancelScope()
        self.tasks.start_soon(self._copy, launch, scope)

    async def _copy(self, launch: Launch, scope: anyio.CancelScope) -> None:
        """Send one copy and report what it met; its response is closed unless handed on."""
        hedging = self._hedging
        number = launch.number
        request = self._request
        response = None
        try:
            with scope:
                attempt = request if launch.content is None else with_body(request, launch.content)
                try:
                    response = await self._executor.send(attempt)
                except httpx.TransportError as exc:
                    await self._report(hedging.failed(number, exc, *describe_error(exc)))
                    return
                head = head_of(response)
                read = hedging.headed(number, head)
                if read is None:  # an SSE answer
                    held, response = response, None
                    await self._report(hedging.streamed(number, head), (held, head, None))
                    return
                try:
                    body, in_place = await read_whole(response, head, read.limit)
                except (httpx.TransportError, httpx.DecodingError) as exc:
                    await self._report(hedging.failed(number, exc, *describe_error(exc)))
                    return
                held, response = response, None
                turn = hedging.received(number, head, body)
                await self._report(turn, (held, head, None if in_place else body))
        except Exception as exc:  # the inner transport's own error ends the call, as unhedged
            self.crash = exc
            self.tasks.cancel_scope.cancel()
        finally:
            if response is not None:
                with anyio.CancelScope(shield=True):
                    await response.aclose()

    async def _report(self, turn: Turn, answer: _Answer | None = None) -> None:
        """Carry out a copy's turn: cancel the losers, then wait, launch, sleep or settle."""
        for loser in turn.cancel:
            self._cancel(loser)
        start = Ended(turn.then) if answer is None else Ended(turn.then, *answer)
        try:  # the executor waits and asks; a race's own end is handed back
            ended = await self._executor.run(
                self._hedging.call, self._request, start, self, CARRIED_ON
            )
        except BaseException:  # cancelled while the budget was asked: its answer is closed
            await self._close(start.response)
            raise
        then = ended.command
        if then is None or isinstance(then, Launch) or carries_on(then):
            await self._close(ended.response)  # (carried on after the race: unhedged)
            if isinstance(then, Launch):
                self._launch(then)
            elif then is not None:
                self.ended = Ended(then)
        else:
            self.ended = ended
        if self.ended is not None and self._asking is not None:
            self._asking.cancel()  # no hedge follows a settled call: it need not wait for one
        self._changed.set()

    def slept(self) -> Launch | Command | None:
        """The backoff before a retry is over (the executor's ``Gate``)."""
        return self._hedging.slept().then

    def answered(self, allowed: bool) -> Launch | Command | None:
        """The gate's answer for the call (the executor's ``Gate``)."""
        return self._hedging.answered(allowed).then

    def _cancel(self, loser: Loser) -> None:
        self._scopes[loser.number].cancel()
        if loser.notice is not None:
            self.tasks.start_soon(self._notify_shielded, loser)

    async def _notify_shielded(self, loser: Loser) -> None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(loser.time_limit):
            await self._notify(loser)

    async def _notify(self, loser: Loser) -> None:
        """POST the loser's ``notifications/cancelled``, if it has one (best effort)."""
        if loser.notice is None:
            return
        request = self._request
        notice = httpx.Request(
            "POST",
            request.url,
            headers=edited(request.headers.raw, loser.edits),
            content=loser.notice,
        )
        try:
            response = await self._executor.send(notice)
        except httpx.TransportError:
            return  # its answer was closed already; the server may still finish it
        await response.aclose()

    @staticmethod
    async def _close(response: httpx.Response | None) -> None:
        if response is not None:
            with anyio.CancelScope(shield=True):
                await response.aclose()
