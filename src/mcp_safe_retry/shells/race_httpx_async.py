"""Hedged reads in the async httpx shell: the copies of one call raced in a task group.

It carries out what ``core.hedging.Hedging`` answers and decides nothing. Each copy runs in
a task of its own, in a cancel scope of its own: the shell's one executor sends it, reads
it and carries out what the race answers (its gate: ``gates.CopyGate``), until a copy is
to be launched, the copy is to wait for the others, or the call is settled. A loser's scope is
cancelled, its response closed (on 2026-07-28 that is the cancellation) and, on a 2025
session, the ``notifications/cancelled`` the core built for the loser's own id is POSTed,
shielded, within the loser's time limit. Cancelling the caller cancels every copy. The
breaker and the budget are asked what the core says to ask them (``Ask``): awaited, never
blocking the event loop, before the first copy, before a hedge, and before a retry.

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

from ..core.commands import Launch, Loser, Next, Send
from ..core.gates import CopyGate, HedgeGate
from ..core.hedging import CARRIED_ON, Hedging
from .bodies_httpx_async import Ended, Executor, close, with_body

__all__ = ["CANCELLED_BY_CALLER", "race"]

CANCELLED_BY_CALLER = "the caller cancelled the request (notifications/cancelled)"


async def race(request: httpx.Request, hedging: Hedging, executor: Executor) -> Ended:
    """Run the copies of a hedged call until one settles it; where the call stopped.

    A copy may settle the call with a command that does not end the exchange (a session
    renewal after its 404): ``executor`` (the shell's one loop) carries that on, unhedged,
    after the race.
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
    command, response, head, body = racing.ended
    call = hedging.call
    return await executor.run(call, request, call, command, response=response, head=head, body=body)


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
        # The breaker may hold the first copy back.
        await self._run(CopyGate(hedging, 0), hedging.start(), anyio.CancelScope())
        while self.ended is None and self.crash is None:
            changed = self._changed = anyio.Event()
            with anyio.move_on_after(hedging.wait()):
                await changed.wait()
            if not changed.is_set():
                await self._hedge()

    async def _hedge(self) -> None:
        """Send a hedge if one is due and the budget and the breaker allow it (asked through
        the executor when the core says to ask them); a copy that settles the call meanwhile
        stops the asking."""
        hedging = self._hedging
        launch: Next = None
        with anyio.CancelScope() as self._asking:
            gate = HedgeGate(hedging)
            asked = hedging.hedge()
            launch, *_ = await self._executor.run(hedging.call, self._request, gate, asked)
        self._asking = None
        if isinstance(launch, Launch):
            self._launch(launch)
        else:  # none, or stopped asking: a token taken for it goes back
            hedging.hedge_unsent()

    def cancelled_by_caller(self) -> None:
        """The caller's own ``notifications/cancelled`` named this call: stop every copy."""
        self.scope.cancel()

    async def abandon(self) -> None:
        """The race ends without an answer: cancel every copy still in flight."""
        if self.ended is not None:
            await close(self.ended[1])
            self.ended = None
        losers = self._hedging.abandon()
        with anyio.CancelScope(shield=True), anyio.move_on_after(self._hedging.cancel_time_limit):
            for loser in losers:
                await self._notify(loser)

    def _launch(self, launch: Launch) -> None:
        scope = self._scopes[launch.number] = anyio.CancelScope()
        gate = CopyGate(self._hedging, launch.number)
        self.tasks.start_soon(self._run, gate, Send(launch.content), scope)

    async def _run(self, gate: CopyGate, command: Next, scope: anyio.CancelScope) -> None:
        """Carry out a copy's commands (or the race's first ones), cancel the losers they
        named, then launch the copy they end with, wait for the others, or settle the call."""
        hedging = self._hedging
        try:
            with scope:
                ended = await self._executor.run(
                    hedging.call, self._request, gate, command, stop=CARRIED_ON
                )
                for loser in hedging.losers():
                    self._scopes[loser.number].cancel()
                    if loser.notice is not None:
                        self.tasks.start_soon(self._notify_shielded, loser)
                then, response, _, _ = ended
                if then is None or isinstance(then, Launch):
                    await close(response)
                    if then is not None:
                        self._launch(then)
                else:  # (a session renewal is carried on after the race, unhedged)
                    self.ended = ended
                    if self._asking is not None:
                        self._asking.cancel()  # no hedge follows a settled call: no need to ask
                self._changed.set()
        except Exception as exc:  # the inner transport's own error ends the call, as unhedged
            self.crash = exc
            self.tasks.cancel_scope.cancel()

    async def _notify_shielded(self, loser: Loser) -> None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(loser.time_limit):
            await self._notify(loser)

    async def _notify(self, loser: Loser) -> None:
        """POST the loser's ``notifications/cancelled``, if it has one (best effort)."""
        if loser.notice is None:
            return
        notice = with_body(self._request, loser.notice, loser.edits)
        try:
            response = await self._executor.inner.handle_async_request(notice)
        except httpx.TransportError:
            return  # its answer was closed already; the server may still finish it
        await response.aclose()
