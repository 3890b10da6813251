"""The race between one hedged call's copies, sans I/O: which calls may be hedged, when a
hedge is due, and whose answer is the call's.

A hedge is one more POST of a READ call sent while the first is still unanswered ("The Tail
at Scale"; gRPC's hedging policy, proposal A6). In MCP each copy needs a JSON-RPC id of its
own (an id MUST NOT match a request still in flight), and the caller must only ever see its
own id. ``Race`` holds the copies of one call (``core/hedge_copies.py``) and answers, for
every event a shell reports, what to do next (``core/latency.py`` keeps the recent latencies
an adaptive hedge delay is read from; ``core/hedge_cancel.py`` says how a loser is
cancelled). Nothing here sleeps, reads a clock or touches a socket.

Rules (one place, used by the engine):

- Only a READ request with an id is hedged, never ``initialize`` (a copy would open a second
  session, and clients MUST NOT cancel it) and never a notification. An UNSAFE call is
  never hedged, whatever its outcomes.
- A call makes at most ``max_retries + max_hedges + 1`` POSTs: hedges and retries are
  counted per call, not per round.
- The first answer that settles the call wins: a complete success, or a failure another
  copy would meet too (a tool error, a JSON-RPC error, a malformed answer). A transient
  failure of one copy lets the others finish; when every copy failed transiently, the usual
  retry decision applies, and if it stops, the last failure is the answer.
- Losers still in flight are cancelled: their responses are closed (on 2026-07-28 closing
  the stream is the cancellation) and, on a 2025 session, a ``notifications/cancelled`` for
  each loser's own wire id is sent (``cancel_by``).
"""

from __future__ import annotations

from enum import StrEnum

import attrs

from .hedge_copies import Copy, CopyKind, CopyState, Ending, Sample
from .idempotency import Idempotency
from .jsonrpc import RequestId, is_request_id, same_id
from .policy import RetryPolicy

__all__ = ["Race", "Standing", "Step", "may_hedge"]

_NEVER_HEDGED = frozenset({"initialize"})


def may_hedge(
    policy: RetryPolicy, *, method: str, request_id: RequestId | None, idempotency: Idempotency
) -> bool:
    """Whether a call may be hedged at all: hedging on, a READ request with an id."""
    return (
        policy.hedge_after is not None
        and request_id is not None
        and idempotency is Idempotency.READ
        and method not in _NEVER_HEDGED
    )


class Standing(StrEnum):
    """Where a race stands after a copy's event, so what the shell does next."""

    WAIT = "wait"  # other copies are in flight: close this answer (if any), wait for them
    WIN = "win"  # hand this copy's answer on under the caller's id; cancel ``Step.cancel``
    EXHAUSTED = "exhausted"  # every copy failed transiently: take the retry decision
    DISCARD = "discard"  # the call is settled already: close this answer, hand nothing on


@attrs.frozen
class Step:
    """A race after one event, and what the shell does about it.

    Attributes:
        race: the race as it now stands.
        standing: what to do with the copy the event was about.
        cancel: copies that were in flight and lost: close each one's response and cancel
            it as ``cancel_by`` says.
    """

    race: Race
    standing: Standing
    cancel: tuple[Copy, ...] = ()

    @property
    def reply_id(self) -> RequestId | None:
        """The id the answer is handed on under: always the caller's."""
        return self.race.caller_id


@attrs.frozen
class Race:
    """The copies of one call and the rules between them (a frozen value; every event
    returns a new one).

    Build it with ``Race.start``; then ``hedge_at`` says when a hedge is due, ``hedge`` and
    ``retry`` add copies, ``begun``, ``commit`` (a stream began) and ``ended`` report on
    them, ``give_up`` settles after a retry decision that stops, and ``abandon`` when the
    caller goes away.
    """

    caller_id: RequestId | None
    delay: float | None  # seconds without an answer before a hedge; None: never hedged
    max_hedges: int
    max_retries: int
    copies: tuple[Copy, ...]
    winner: int | None = None
    abandoned: bool = False

    @classmethod
    def start(
        cls,
        policy: RetryPolicy,
        *,
        method: str,
        caller_id: RequestId | None,
        idempotency: Idempotency,
        delay: float | None,
        now: float,
    ) -> Race:
        """The race of a call whose first copy is sent now, under the caller's id.

        Args:
            policy: the policy in force (``max_hedges``, ``max_retries``).
            method: the JSON-RPC method.
            caller_id: the id the caller gave (None: a notification, never hedged).
            idempotency: whether the call may be sent again.
            delay: the hedge delay for this call (``hedge_delay``); ignored when the call
                may not be hedged (``may_hedge``).
            now: the engine's clock.
        """
        hedged = delay is not None and may_hedge(
            policy, method=method, request_id=caller_id, idempotency=idempotency
        )
        first = Copy(1, CopyKind.FIRST, caller_id, now)
        return cls(
            caller_id=caller_id,
            delay=delay if hedged else None,
            max_hedges=policy.max_hedges if hedged else 0,
            max_retries=policy.max_retries,
            copies=(first,),
        )

    # -- what the race knows -------------------------------------------------------------

    @property
    def settled(self) -> bool:
        """A copy won, or the caller gave up: nothing more is sent."""
        return self.winner is not None or self.abandoned

    @property
    def cap(self) -> int:
        """The most POSTs this call may make."""
        return 1 + self.max_retries + self.max_hedges

    @property
    def hedges(self) -> int:
        return sum(1 for c in self.copies if c.kind is CopyKind.HEDGE)

    @property
    def retries(self) -> int:
        return sum(1 for c in self.copies if c.kind is CopyKind.RETRY)

    @property
    def in_flight(self) -> tuple[Copy, ...]:
        return tuple(c for c in self.copies if c.in_flight)

    def copy(self, number: int) -> Copy:
        """The copy with this number (ValueError for one never sent)."""
        if not 1 <= number <= len(self.copies):
            raise ValueError(f"no copy number {number}")
        return self.copies[number - 1]

    def copy_for(self, wire_id: RequestId | None) -> Copy | None:
        """The copy that went out under ``wire_id``, if any (ids compare by JSON value)."""
        for c in self.copies:
            if same_id(c.wire_id, wire_id):
                return c
        return None

    def hedge_at(self) -> float | None:
        """When the next hedge is due (engine clock), or None when none may follow: the
        call is not hedged or settled, its hedges or POSTs are used up, no copy is in flight
        (a retry decision is pending), or an answer has begun to arrive."""
        if self.delay is None or self.settled or self.hedges >= self.max_hedges:
            return None
        if len(self.copies) >= self.cap:
            return None
        flying = self.in_flight
        if not flying or any(c.answered_at is not None for c in flying):
            return None
        return max(c.sent_at for c in self.copies) + self.delay

    def samples(self, now: float) -> tuple[Sample, ...]:
        """What this call tells its server's latency window, once it is settled or has
        committed to a stream (``now``): each copy's own latency, from its own POST.

        A copy whose answer began gives its time to that answer (its response head); a copy
        cancelled unanswered gives a censored latency, ``>= now - sent_at``; a copy that
        failed transiently, or whose answer was a failure, gives none (a quick error says
        nothing of how long an answer takes). Measured from each copy's own POST, a hedge
        that wins is no longer counted at the hedge's delay plus its own latency: a window
        fed that way drags the quantile up after every hedge it causes.
        """
        out: list[Sample] = []
        for c in self.copies:
            if c.answered_at is not None:
                if c.ending in (None, Ending.SUCCESS):
                    out.append(Sample(c.number, max(0.0, c.answered_at - c.sent_at), False))
            elif c.state is CopyState.LOST:
                out.append(Sample(c.number, max(0.0, now - c.sent_at), True))
        return tuple(out)

    # -- events --------------------------------------------------------------------------

    def hedge(self, now: float, wire_id: RequestId) -> Race:
        """Send a hedge now under ``wire_id`` (a fresh id); only once ``hedge_at`` is due.

        The engine asks the retry budget and the circuit first; when they refuse, it calls
        ``stop_hedging`` instead.
        """
        due = self.hedge_at()
        if due is None or now < due:
            raise ValueError("no hedge is due")
        return self._add(CopyKind.HEDGE, now, wire_id)

    def stop_hedging(self) -> Race:
        """No more hedges for this call (the budget or the circuit said no)."""
        return attrs.evolve(self, max_hedges=self.hedges)

    def retry(self, now: float, wire_id: RequestId) -> Race:
        """Send a retry now under ``wire_id``, after EXHAUSTED and a decision to retry."""
        if self.settled or self.in_flight:
            raise ValueError("a retry follows only when every copy failed")
        if self.retries >= self.max_retries or len(self.copies) >= self.cap:
            raise ValueError("no retry is left")
        return self._add(CopyKind.RETRY, now, wire_id)

    def begun(self, number: int, now: float) -> Race:
        """The copy's answer began to arrive (its response head): no hedge follows it."""
        c = self.copy(number)
        if not c.in_flight or c.answered_at is not None:
            return self
        return self._replace(attrs.evolve(c, answered_at=now))

    def commit(self, number: int, now: float) -> Step:
        """Stay with this copy, whose answer began to stream (an SSE head): the others are
        cancelled now, as a transport cannot hand one stream on while it waits on others.

        The race stays open: the stream's end settles it (``ended``), and a transient break
        leaves the usual retry decision (EXHAUSTED), as for a call that was never hedged.
        """
        c = self.copy(number)
        if not c.in_flight:
            raise ValueError(f"copy {number} is not in flight")
        race = self.begun(number, now)
        others = tuple(
            attrs.evolve(o, state=CopyState.LOST)
            for o in race.copies
            if o.in_flight and o.number != number
        )
        for o in others:
            race = race._replace(o)
        return Step(race, Standing.WAIT, others)

    def ended(self, number: int, ending: Ending, now: float) -> Step:
        """The copy's answer is complete (or its request failed); what follows.

        A copy cancelled a moment too late may still end: its answer is noted and dropped.
        """
        c = self.copy(number)
        answered = c.answered_at if c.answered_at is not None else now
        if c.state in (CopyState.LOST, CopyState.ABANDONED) and c.ending is None:
            late = attrs.evolve(c, answered_at=answered, ending=ending)
            return Step(self._replace(late), Standing.DISCARD)
        if not c.in_flight:
            raise ValueError(f"copy {number} has ended already")
        if self.settled:  # not reached through these methods: settling cancels every copy
            late = attrs.evolve(c, state=CopyState.LOST, answered_at=answered, ending=ending)
            return Step(self._replace(late), Standing.DISCARD)
        if ending is Ending.TRANSIENT:
            failed = attrs.evolve(c, state=CopyState.FAILED, answered_at=answered, ending=ending)
            race = self._replace(failed)
            return Step(race, Standing.WAIT if race.in_flight else Standing.EXHAUSTED)
        won = attrs.evolve(c, state=CopyState.WON, answered_at=answered, ending=ending)
        return self._replace(won)._settle(number, CopyState.LOST, Standing.WIN)

    def give_up(self) -> Step:
        """After EXHAUSTED, the retry decision stopped: the last failure is the answer."""
        if self.settled or self.in_flight:
            raise ValueError("giving up follows only when every copy failed")
        last = max(
            (c for c in self.copies if c.state is CopyState.FAILED),
            key=lambda c: (c.answered_at or 0.0, c.number),
        )
        race = self._replace(attrs.evolve(last, state=CopyState.WON))
        return Step(attrs.evolve(race, winner=last.number), Standing.WIN)

    def abandon(self) -> Step:
        """The caller gave the call up (a cancellation, a closed stream): cancel every copy."""
        if self.settled:
            return Step(self, Standing.DISCARD)
        race = attrs.evolve(self, abandoned=True)
        return race._settle(None, CopyState.ABANDONED, Standing.DISCARD)

    # -- helpers -------------------------------------------------------------------------

    def _add(self, kind: CopyKind, now: float, wire_id: RequestId) -> Race:
        if self.copy_for(wire_id) is not None or not is_request_id(wire_id):
            raise ValueError(f"wire id {wire_id!r} is not fresh")
        new = Copy(len(self.copies) + 1, kind, wire_id, now)
        return attrs.evolve(self, copies=(*self.copies, new))

    def _replace(self, c: Copy) -> Race:
        copies = list(self.copies)
        copies[c.number - 1] = c
        return attrs.evolve(self, copies=tuple(copies))

    def _settle(self, winner: int | None, fate: CopyState, standing: Standing) -> Step:
        cancelled = tuple(attrs.evolve(c, state=fate) for c in self.copies if c.in_flight)
        race = self
        for c in cancelled:
            race = race._replace(c)
        return Step(attrs.evolve(race, winner=winner), standing, cancelled)
