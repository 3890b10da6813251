"""The duplicate guard: a re-send of an UNSAFE tool call that may have run is not sent.

The layers above the transport (an agent framework's tool retry, a model invited to try
again, an application's tenacity loop) re-send a failed ``tools/call`` without knowing what
happened on the wire. The transport knows: it remembers, per server, every UNSAFE tool call
whose request was sent and got no answer (``Delivery.MAY_HAVE_RUN``, ``core/delivery.py``),
for ``RetryPolicy.duplicate_window`` seconds. A later call with the same digest (method,
tool and arguments: ``jsonrpc.Digest``, the one the re-send detector reads) to the same
server is held (``DuplicateGuard.HOLD``), or sent and labelled (``LABEL``, or with consent:
``allow_duplicate()``). An answered attempt of that call ends the hold.

The session is not part of the match: a side effect lives on the server, not in an MCP
session, and a session changes under the same call (this transport renews one the server
expired; a client opens a new one after a teardown; a 2026-07-28 server has none).

The memory is the call ledger (``call_ledger``): the process's own, shared by every client
of the process, or one handed in (a fleet's: ``RedisCallLedger``). A call is written in
just before its request leaves, so an identical call sent while it is still running is held
too (``Outcome.DUPLICATE_IN_FLIGHT``); an answer that came after its caller stopped waiting
(a cancellation, the SDK's ``notifications/cancelled``) keeps the hold: it ran unseen.
``GuardTable`` is a transport's view of it (the mode and window of its policy); the rest is
pure.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

import attrs

from .attempt_kinds import AttemptKind
from .breaker import FOLLOW_UP_WINDOW
from .call_ledger import Ledger, LedgerTable
from .decision import Decision, Reason
from .delivery import Delivery, delivery_of
from .duplicate import Duplicate, EarlierCall, LedgerState, Verdict
from .idempotency import Idempotency
from .jsonrpc import RequestFacts
from .outcomes import Classification, Outcome, verdict
from .policy import DuplicateGuard
from .records import AttemptValues, Fixed, Seen
from .servers import ServerKey, server_key
from .tasks import TERMINAL

__all__ = [
    "DUPLICATE_HELD_KIND",
    "IN_FLIGHT_KIND",
    "Duplicate",
    "EarlierCall",
    "GuardTable",
    "Verdict",
    "call_delivery",
    "held",
]

DUPLICATE_HELD_KIND = "duplicate_held"
"""The ``error_kind`` of an attempt the guard held (as ``circuit_open`` is the breaker's)."""

IN_FLIGHT_KIND = "duplicate_in_flight"
"""The ``error_kind`` of an attempt held because the same call is still in flight."""


_UNSAFE, _OFF = Idempotency.UNSAFE, DuplicateGuard.OFF  # read for every tool call
_HELD = Verdict.HELD
_TASK_CREATED = Outcome.TASK_CREATED
_RAN = frozenset({Outcome.TOOL_SUCCESS, Outcome.TOOL_ERROR})  # a tool result: the tool ran


def call_delivery(attempts: Sequence[AttemptValues | Seen]) -> Delivery:
    """Whether a call's request can have run: its newest attempt that reached the server
    decides (an unsent one after it changes nothing; a renewal's steps are not the call's)."""
    for attempt in reversed(attempts):
        if attempt.kind == AttemptKind.REINITIALISE:
            continue
        found = delivery_of(attempt.classification, attempt.error_kind, attempt.kind)
        if found is not Delivery.NOT_SENT:
            return found
    return Delivery.NOT_SENT


_Answered = tuple[float, "str | ServerKey", str, str, Fixed, Classification, str, "str | None"]


def server_of(where: str | ServerKey) -> str:
    """The breaker key of a guarded call's server (a ``ServerKey`` may name a caller too)."""
    return server_key(str(where.url)) if isinstance(where, ServerKey) else server_key(where)


def sends(duplicate: Duplicate | None) -> bool:
    """Whether a call the guard found ``duplicate`` for is sent (held and joined ones are not)."""
    return duplicate is None or duplicate.verdict not in _NOT_SENT


_NOT_SENT = frozenset({Verdict.HELD, Verdict.JOINED})


def _never() -> float:
    raise TypeError("a ledger of a GuardTable's own has no clock: hand in in_doubt's now")


_STOPS = {
    Verdict.JOINED: Decision.stop(Reason.DUPLICATE_JOINED),
    Outcome.DUPLICATE_IN_FLIGHT: Decision.stop(Reason.DUPLICATE_IN_FLIGHT),
    Outcome.DUPLICATE_HELD: Decision.stop(Reason.DUPLICATE_HELD),
}


class Joins(Protocol):
    """The books of a call that joins an earlier one: they keep its answer."""

    joined: object


def unsent(duplicate: Duplicate, target: str, books: Joins) -> tuple[Decision, Classification]:
    """How a call the guard does not send ends (``target``: what the call is): joined to
    the earlier call's answer (kept in ``books``, handed on as this call's), or held."""
    if duplicate.verdict is Verdict.JOINED:
        books.joined, found = joined(duplicate, target)
        return _STOPS[Verdict.JOINED], found
    found = held(duplicate, target)
    return _STOPS[found.outcome], found


def joined(duplicate: Duplicate, target: str) -> tuple[object, Classification]:
    """A re-send that joins the earlier call whose answer went unseen: that answer (the
    JSON-RPC response), and the verdict its record ends with (the earlier call's own,
    which names it)."""
    message, final = duplicate.earlier.answer
    detail = (
        f"{target} not sent: joined the same call, which {duplicate.earlier.describe()}; "
        "its answer is this call's"
    )
    return message, attrs.evolve(final, detail=detail)


def held(duplicate: Duplicate, target: str) -> Classification:
    """The verdict on a call the guard held: nothing sent, the earlier call named (one still
    in flight: ``DUPLICATE_IN_FLIGHT``, the analogue of an HTTP 409)."""
    earlier = duplicate.earlier
    same = f"{target} not sent: the same call (same server, tool and arguments) "
    if earlier.state is LedgerState.IN_FLIGHT:
        detail = (
            f"{same}{earlier.describe()}, so it is not sent twice. Wait for that call's "
            "answer; send it again only inside allow_duplicate()"
        )
        return verdict(Outcome.DUPLICATE_IN_FLIGHT, detail=detail, error_kind=IN_FLIGHT_KIND)
    detail = (
        f"{same}{earlier.describe()}, so it may have run. Send it again only if it did "
        "not: inside allow_duplicate(), or with RetryPolicy(duplicate_guard='label')"
    )
    return verdict(Outcome.DUPLICATE_HELD, detail=detail, error_kind=DUPLICATE_HELD_KIND)


class GuardTable:
    """A transport's duplicate guard: what it does with a repeat (``mode``), how long a call
    is kept (``window``), and the ledger it keeps them in (``call_ledger``: the process's own
    unless given one, so that every client of the process sees the same calls).

    Args:
        mode: what is done with a repeat (``DuplicateGuard``).
        window: seconds a call in flight, or that may have run, is kept.
        ledger: where the calls are kept (the transports hand in the process's own:
            ``mcp_safe_retry.CallLedger``; a table of its own if None).
    """

    def __init__(
        self,
        mode: DuplicateGuard = DuplicateGuard.HOLD,
        window: float = 600.0,
        ledger: Ledger | None = None,
        *,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.mode = mode
        self.window = window
        # The UNSAFE calls answered last, for the SDK's follow-up read (``follow_up_failed``).
        self._answered: deque[_Answered] = deque(maxlen=32)
        if ledger is None:
            ledger = LedgerTable(clock=clock if clock is not None else _never)
        self.ledger: Ledger = ledger

    def guards(self, facts: RequestFacts, idempotency: Idempotency) -> bool:
        """Whether this message is one the guard watches: a request (``watches``)."""
        return facts.id is not None and self.watches(facts.method, idempotency)

    def watches(self, method: str, idempotency: Idempotency) -> bool:
        """Whether a request of ``method`` is one the guard watches: a tool call of an UNSAFE
        tool (a transport remembers the answer per tool: ``CallContext.request_kind``)."""
        return idempotency is _UNSAFE and method == "tools/call" and self.mode is not _OFF

    def claim(
        self,
        server: str | ServerKey,
        facts: RequestFacts,
        consent: bool,
        *,
        owner: str,
        started_at: float,
        session_id: str | None,
        now: float,
    ) -> tuple[Duplicate | None, str]:
        """Write a watched call in the ledger as in flight, just before its request leaves,
        and say what to do if it repeats one kept there: the earlier call with the verdict
        (held: nothing written; labelled or allowed: it is sent, and written in its place),
        or None; with the ledger that decided."""
        call = EarlierCall(
            facts.id,
            started_at,
            Delivery.MAY_HAVE_RUN,
            "",
            session_id=session_id,
            state=LedgerState.IN_FLIGHT,
            tool=facts.tool,
            owner=owner,
        )
        key, digest, ledger = str(server), str(facts.identity), self.ledger
        if consent or self.mode is DuplicateGuard.LABEL:
            found = ledger.look(key, digest, now)
            decided_by = ledger.put(key, digest, call, self.window, now)
            if found is None:
                return None, decided_by
            verdict = Verdict.ALLOWED if consent else Verdict.LABELLED
            return Duplicate(found, verdict, decided_by), decided_by
        found, decided_by = ledger.claim(key, digest, call, self.window, now)
        if found is None:
            return None, decided_by
        if found.state is LedgerState.UNSEEN and found.answer is not None:
            return Duplicate(found, Verdict.JOINED, decided_by), decided_by  # its answer
        return Duplicate(found, Verdict.HELD, decided_by), decided_by

    def follow_up_failed(self, server: str, now: float) -> None:
        """A list read to ``server`` (its breaker key) failed with no last good answer to
        serve: an UNSAFE call that server answered just before (``FOLLOW_UP_WINDOW``) is
        the call whose ``call_tool`` the SDK now fails (mcp 2.x lists the tools after a
        call whose tool it never listed), so its caller never saw it answered: a re-send is
        held, naming it."""
        for at, where, key, digest, fixed, final, owner, session_id in list(self._answered):
            if not 0.0 <= now - at <= FOLLOW_UP_WINDOW or server_of(where) != server:
                continue
            facts = fixed.facts
            ran = EarlierCall(
                facts.id,
                fixed.started_at,
                Delivery.ANSWERED,
                str(final.outcome),
                detail="the SDK's follow-up list read failed, so its caller saw no answer",
                session_id=session_id,
                state=LedgerState.UNSEEN,
                tool=facts.tool,
                owner=owner,
            )
            self.ledger.put(key, digest, ran, self.window, now)

    def task_ended(self, server: str, digest: str, owner: str, *, now: float) -> None:
        """A poll saw the task of an UNSAFE call end: the call is answered, no longer held."""
        self.ledger.settle(server, digest, owner, None, window=self.window, now=now)

    def settled(
        self,
        server: str | ServerKey,
        fixed: Fixed,
        attempts: Sequence[AttemptValues | Seen],
        final: Classification,
        *,
        owner: str,
        unseen: bool,
        session_id: str | None,
        now: float,
        message: object = None,
    ) -> None:
        """A watched call (which began as ``fixed`` says) ended: an answer its caller saw, or
        a request never sent, forgets its claim; one that may have run, or whose answer
        (``message``) came after its caller stopped waiting (``unseen``), is kept as it
        ended, that answer with it for a re-send to join. A re-send that joined it has
        handed the answer on: the call is forgotten (it was answered, and seen)."""
        delivery = call_delivery(attempts)
        facts = fixed.facts
        key, digest = str(server), str(facts.identity)
        replaced = fixed.duplicate  # sent with consent, or labelled, in an earlier's place
        if final.outcome is _TASK_CREATED and final.task_status not in TERMINAL:
            # The server runs it as a task: held as in flight until a poll sees it end.
            running = EarlierCall(
                facts.id,
                fixed.started_at,
                Delivery.MAY_HAVE_RUN,
                str(final.outcome),
                detail=f"its task {final.task_id!r} is still running",
                session_id=session_id,
                state=LedgerState.IN_FLIGHT,
                tool=facts.tool,
                owner=owner,
            )
            self.ledger.settle(key, digest, owner, running, window=self.window, now=now)
            return
        if replaced is not None and replaced.verdict is Verdict.JOINED:
            earlier = replaced.earlier
            self.ledger.settle(key, digest, earlier.owner, None, window=self.window, now=now)
            return
        if delivery is Delivery.ANSWERED and not unseen:
            self.ledger.settle(key, digest, owner, None, window=self.window, now=now)
            if final.outcome in _RAN:  # the SDK's own follow-up read may yet fail the call
                self._answered.append((now, server, key, digest, fixed, final, owner, session_id))
            return
        if delivery is Delivery.NOT_SENT:
            if replaced is not None and replaced.verdict is not _HELD:
                # Sent with consent or labelled in an earlier call's place, then never sent:
                # the earlier call stays kept.
                kept: EarlierCall | None = replaced.earlier
            else:
                kept = None
            self.ledger.settle(key, digest, owner, kept, window=self.window, now=now)
            return
        earlier = EarlierCall(
            facts.id,
            fixed.started_at,
            delivery,
            str(final.outcome),
            None if final.error_kind is None else str(final.error_kind),
            final.detail,
            session_id,
            state=LedgerState.UNSEEN if delivery is Delivery.ANSWERED else LedgerState.MAY_HAVE_RUN,
            tool=facts.tool,
            owner=owner,
            answer=(message, final) if unseen and isinstance(message, dict) else None,
        )
        self.ledger.settle(key, digest, owner, earlier, window=self.window, now=now)
