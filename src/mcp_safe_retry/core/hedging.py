"""Hedged reads carried out for one call, sans I/O: the race of its copies, driven for a shell.

``core/hedge_race.py`` holds the rules (``Race``); ``Hedging`` applies them to a ``Call``. It says
when a hedge is due, asks the retry budget and the circuit breaker before each one (as
before a retry: itself when they are this process's own, else through the shell with
``Ask``), lets the breaker hold back the first copy as any call's first POST,
classifies each copy's answer, counts every copy that met its own answer with the budget and
the breaker (``core/tally.py``), records every copy as an attempt of the call (numbered as
sent, with its fate), and settles the call through the copy whose answer is the call's. A
shell runs each copy in a task of its own through its one executor, which tells the copy's
gate (``gates.CopyGate``) what the copy met and carries out the command it answers; the
losers to cancel wait in ``Hedging.losers`` (``shells/race_httpx_async.py``). Nothing here
sleeps, reads a socket or imports an HTTP library; the context's clock is the only clock read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from .attempt_kinds import ErrorKind
from .call import Call
from .classify import classify_answer
from .commands import (
    CANCEL_EDITS,
    CANCEL_TIME_LIMIT,
    Ask,
    Command,
    Launch,
    Lock,
    Loser,
    Next,
    Send,
    Sleep,
    Unlock,
)
from .events import Head, streams
from .hedge_cancel import CancelBy, cancel_by, cancellation
from .hedge_copies import Copy, ending_of
from .hedge_race import Race, Standing, Step, may_hedge
from .latency import hedge_delay
from .observed import GiveUp
from .outcomes import Classification, Outcome, verdict
from .records import RetryOrigin
from .servers import server_key
from .state import CallProtocolError, expect
from .tally import asked_wait, refund, tally

if TYPE_CHECKING:
    from .context import CallContext
    from .jsonrpc import RequestId

__all__ = ["CARRIED_ON", "Hedging", "hedged"]

CARRIED_ON = (Send, Lock, Unlock)
"""What follows a race the shell's executor carries on unhedged, once the race is over (a
session renewal after a copy's 404): a copy's run stops there and hands it back."""

_Settle = Callable[[], Command]  # feeds the call the copy's answer, returns its command
_ASKS = (Sleep, Ask)  # the call waits for the shell: no copy is sent, none settles
_LOST_DETAIL = "hedged copy cancelled: another copy's answer won"
_ABANDONED_DETAIL = "hedged copy cancelled with its call"


def hedged(
    context: CallContext, call: Call, url: str, headers: Mapping[str, str]
) -> Hedging | None:
    """The race for a call POSTed to ``url``, or None when it is not hedged (hedging off,
    not a READ request, ``initialize``)."""
    policy = context.policy
    facts = call.facts
    if not may_hedge(
        policy, method=facts.method, request_id=facts.id, idempotency=call.idempotency
    ):
        return None
    key = server_key(url)
    delay = hedge_delay(policy.hedge_after, context.latencies.window(key))
    if delay is None:
        return None
    version = headers.get("mcp-protocol-version") or context.observed.protocol_version
    session = headers.get("mcp-session-id")
    notify = cancel_by(version, session) is CancelBy.NOTIFY
    return Hedging(context, call, key, delay, notify=notify, session=session)


class Hedging:
    """The race of one hedged call (a mutable holder around the frozen ``Race``)."""

    def __init__(
        self,
        context: CallContext,
        call: Call,
        server: str,
        delay: float,
        *,
        notify: bool,
        session: str | None = None,
    ) -> None:
        self._context = context
        self._session = session
        self.call = call
        self._server = server
        self._delay = delay
        self._notify = notify
        self.cancel_time_limit = CANCEL_TIME_LIMIT  # a loser's cancellation POST, at most
        self._first_origin = call.outgoing.origin
        self._learnt: set[int] = set()  # copies whose latency the window has
        self._heads: dict[int, Head] = {}  # copies whose head came, their body read whole
        self._losers: list[Loser] = []  # copies to cancel, until the shell takes them
        self.race: Race | None = None
        self._token = False  # a budget token taken for a hedge not sent yet

    def start(self) -> Next:
        """The first copy, under the caller's id, once the breaker admits it as it would the
        first POST of a call never hedged: a ``Launch``, an ``Ask`` for the breaker
        with (its gate: ``gates.CopyGate(hedging, 0)``), or what ends a call held back
        (``Refuse``, or a contained ``Answer``)."""
        return self._after(self.call.start())

    def losers(self) -> tuple[Loser, ...]:
        """The copies to cancel now, each named once: those a copy's event made losers.

        They come with the command that settles the call or commits it to a stream, which
        ends a copy's run (the executor hands it back at once): the shell takes them then.
        """
        losers = tuple(self._losers)
        self._losers.clear()
        return losers

    def answered(self, allowed: bool) -> Next:
        """The gate's answer to the call's ``Ask``: the breaker's (its first copy, or its
        retry), or the budget's (for its retry, every copy failed)."""
        return self._after(self.call.answered(allowed))

    def watch(self, cancel: GiveUp | None) -> None:
        """While the copies race, the caller's own ``notifications/cancelled`` for its id
        is handed ``cancel`` for the shell to call (the first copy hears the notification;
        the others would not); None: no more."""
        caller_id = _id(self.call.facts.id)
        self._context.observed.racing(self._session, caller_id, cancel)

    def wait(self) -> float | None:
        """Seconds until the next hedge is due (0 when it is), or None when none may follow."""
        due = self._race.hedge_at()
        return None if due is None else max(0.0, due - self._context.clock())

    def hedge(self) -> Launch | Ask | None:
        """Send a hedge now, if one is due and the budget and then the breaker allow it, as
        they would a retry: a ``Launch``; an ``Ask`` when the shell must ask the gate (the
        budget, then the breaker) first, its answer then given to ``hedge_answered``; None:
        no hedge now (none more, if one of them said no)."""
        if not self._due():
            return None
        consult = self._context.ask_budget
        if consult is not None:  # the same rule as for a retry (CallContext.ask_budget)
            return consult
        return self._budget_answered(self._context.budget.allow_retry())

    def hedge_answered(self, allowed: bool) -> Launch | Ask | None:
        """The gate's answer for the hedge ``hedge`` asked about: the breaker's once the
        budget gave a token for it, the budget's before."""
        if self._token:
            return self._breaker_answered(allowed)
        return self._budget_answered(allowed)

    def _budget_answered(self, allowed: bool) -> Launch | Ask | None:
        if not allowed:
            self._stop_hedging()
            return None
        self._token = True  # spent on this hedge: given back if it is not sent
        admit = self.call.admit
        if admit is None:
            return self._send_hedge()
        if self._context.breaker_inline:  # the same rule as for any POST (Call._send_or_admit)
            return self._breaker_answered(admit.allow())
        return admit

    def _breaker_answered(self, allowed: bool) -> Launch | None:
        if not allowed:
            self._give_back()
            self._stop_hedging()
            return None
        return self._send_hedge()

    def _due(self) -> bool:
        due = self._race.hedge_at()
        return due is not None and self._context.clock() >= due

    def hedge_unsent(self) -> None:
        """The shell stopped asking about a hedge (a copy settled the call meanwhile): a
        token the budget gave for it goes back."""
        self._give_back()

    def _give_back(self) -> None:
        """The hedge the budget allowed is not sent: its token goes back."""
        if self._token:
            self._token = False
            refund(self._context)

    def _stop_hedging(self) -> None:
        """The budget or the breaker said no: the race goes on with the copies in flight."""
        self.race = self._race.stop_hedging()

    def _send_hedge(self) -> Launch | None:
        """The hedge, unless the race moved on while the budget or breaker was asked."""
        if not self._due():
            self._give_back()
            return None
        self._token = False
        race = self._race
        now = self._context.clock()
        wire_id = self._context.fresh_id()
        content = self.call.copies.content(wire_id)
        self.race = race = race.hedge(now, wire_id)
        return Launch(len(race.copies), content)

    def headed(self, number: int, head: Head) -> Next:
        """Copy ``number``'s head arrived (no hedge follows now): its body is read whole
        (``Read``, then ``received``), or it streams (see ``_streamed``)."""
        self.race = self._race.begun(number, self._context.clock())
        if streams(head, self.call.facts):
            return self._streamed(number, head)
        self._heads[number] = head
        return self._context.read_whole

    def _streamed(self, number: int, head: Head) -> Next:
        """Copy ``number``'s SSE answer began: the call stays with it (a transport cannot
        hand one stream on while others wait), the others are cancelled."""
        race = self._race
        if race.settled or not race.copy(number).in_flight:
            return None  # a late answer of a copy that lost
        step = race.commit(number, self._context.clock())
        self.race = step.race
        self._learn(step.race)
        self._cancel(step, _LOST_DETAIL)
        won = step.race.copy(number)
        self.call.adopt(won, self._origin(won))
        return self.call.headed(head)

    def received(self, number: int, body: bytes) -> Next:
        """Copy ``number``'s whole body (its head came to ``headed``)."""
        copy = self._race.copy(number)
        head = expect(self._heads.pop(number, None), "the copy's head (headed() comes first)")
        classification, _ = classify_answer(
            head.status,
            body,
            content_type=head.content_type,
            expected_id=copy.wire_id,
            method=self.call.facts.method,
            max_event_bytes=self._context.max_event_bytes,
            want_message=False,
            tasks=self.call.facts.declares_tasks,
        )
        return self._ended(number, classification, head, None, lambda: self._read(head, body))

    def failed(self, number: int, error: BaseException, kind: ErrorKind, detail: str) -> Next:
        """Copy ``number`` met a network error instead of an answer."""
        classification = verdict(Outcome.NETWORK_ERROR, error_kind=kind, detail=detail[:200])
        return self._ended(
            number, classification, None, kind, lambda: self.call.failed(error, kind, detail)
        )

    def slept(self) -> Next:
        """The backoff before a retry is over."""
        return self._after(self.call.slept())

    def abandon(self) -> tuple[Loser, ...]:
        """The caller gave the call up: every copy in flight is cancelled (the caller's own
        ``notifications/cancelled`` names the first copy's id, its own: none is added)."""
        if self.race is not None:  # else given up while the breaker was asked, none sent
            step = self._race.abandon()
            self.race = step.race
            self._cancel(step, _ABANDONED_DETAIL, caller_notifies=True)
        return self.losers()

    # -- helpers -------------------------------------------------------------------------

    @property
    def _race(self) -> Race:
        return expect(self.race, "a race (start() comes first)")

    def _ended(
        self,
        number: int,
        classification: Classification,
        head: Head | None,
        kind: ErrorKind | None,
        settle: _Settle,
    ) -> Next:
        race = self._race
        context = self._context
        step = race.ended(number, ending_of(context.policy, classification), context.clock())
        self.race = step.race
        copy = step.race.copy(number)
        if step.standing is Standing.DISCARD:
            return None
        if step.standing is Standing.WAIT:  # it failed, transiently; the others may not
            retry_after = None if head is None else asked_wait(head, context.wall_clock)
            tally(context, self.call.admit, classification, retry_after, ends_call=False)
            self.call.copies.record(copy, self._origin(copy), classification, head, kind)
            return None
        self._cancel(step, _LOST_DETAIL)
        if step.standing is Standing.WIN:
            self._learn(step.race)
        self.call.adopt(copy, self._origin(copy))
        command = settle()  # counts the copy with the budget and the breaker (Call._decide_attempt)
        if step.standing is Standing.EXHAUSTED:
            return self._after(command)
        return command

    def _after(self, command: Command) -> Next:
        """The race's turn after a command of the call taken while no copy is in flight
        (before the first, or after every copy failed): a ``Send`` is the first copy or a
        retry; asking the breaker or the budget, or a backoff, waits for the shell;
        anything else ends the call (after copies failed: through the last of them)."""
        race = self.race
        if race is not None and race.settled:  # a copy won: what follows is no copy
            return command  # (a renewed session's re-send: carried on, unhedged)
        if type(command) is Send:
            return self._launch(command)
        if race is not None and not race.settled and type(command) not in _ASKS:
            self.race = race.give_up().race
        return command

    def _launch(self, send: Send) -> Launch:
        """The first copy, under the caller's id, or a retry after every copy failed."""
        if self.race is not None:
            return self._retry(send)
        call = self.call
        self.race = Race.start(
            self._context.policy,
            method=call.facts.method,
            caller_id=call.facts.id,
            idempotency=call.idempotency,
            delay=self._delay,
            now=self._context.clock(),
        )
        return Launch(1, send.content)

    def _read(self, head: Head, body: bytes) -> Command:
        self.call.headed(head)
        return self.call.received(body)

    def _retry(self, send: Send) -> Launch:
        """The call decided to retry after every copy failed: its retry is one more copy."""
        wire_id = _id(self.call.outgoing.wire_id)
        self.race = race = self._race.retry(self._context.clock(), wire_id)
        return Launch(len(race.copies), send.content)

    def _cancel(self, step: Step, detail: str, *, caller_notifies: bool = False) -> None:
        """Record the copies ``step`` cancelled, and name them for the shell (``losers``)."""
        ended = verdict(Outcome.NETWORK_ERROR, error_kind=ErrorKind.CANCELLED, detail=detail)
        losers = self._losers
        for copy in step.cancel:
            self.call.copies.record(copy, self._origin(copy), ended, None, ErrorKind.CANCELLED)
            wire_id = _id(copy.wire_id)
            notify = self._notify and not (caller_notifies and copy.number == 1)
            notice = cancellation(wire_id) if notify else None
            losers.append(Loser(copy.number, wire_id, notice, CANCEL_EDITS, self.cancel_time_limit))

    def _learn(self, race: Race) -> None:
        """Feed the server's latency window (the adaptive delay reads it) what the race
        knows now, each copy once: at a win, or when a stream is committed to (its copy's
        head is then its answer)."""
        latencies = self._context.latencies
        for sample in race.samples(self._context.clock()):
            if sample.copy not in self._learnt:
                self._learnt.add(sample.copy)
                latencies.add(self._server, sample.seconds, censored=sample.censored)

    def _origin(self, copy: Copy) -> RetryOrigin:
        return self._first_origin if copy.number == 1 else RetryOrigin.SDK


def _id(wire_id: RequestId | None) -> RequestId:
    """A hedged call's id (or a copy's): only a request with an id is hedged."""
    if wire_id is None:
        raise CallProtocolError("a hedged call has an id")
    return wire_id
