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

``GuardTable`` is the per-transport memory (a mutable holder, bounded by the window and a
count); the rest is pure.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from .attempt_kinds import AttemptKind
from .delivery import Delivery, delivery_of
from .duplicate import Duplicate, EarlierCall, Verdict
from .idempotency import Idempotency
from .jsonrpc import Digest, RequestFacts
from .outcomes import Classification, Outcome, verdict
from .policy import DuplicateGuard
from .records import AttemptValues, Fixed, Seen
from .servers import ServerKey

__all__ = [
    "DUPLICATE_HELD_KIND",
    "Duplicate",
    "EarlierCall",
    "GuardTable",
    "Verdict",
    "call_delivery",
    "held",
]

DUPLICATE_HELD_KIND = "duplicate_held"
"""The ``error_kind`` of an attempt the guard held (as ``circuit_open`` is the breaker's)."""


_SUCCESS = Outcome.TOOL_SUCCESS  # answered: with nothing remembered, nothing to forget
_UNSAFE, _OFF = Idempotency.UNSAFE, DuplicateGuard.OFF  # read for every tool call


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


def held(duplicate: Duplicate, target: str) -> Classification:
    """The verdict on a call the guard held: nothing sent, the earlier call named."""
    detail = (
        f"{target} not sent: the same call (same server, tool and arguments) "
        f"{duplicate.earlier.describe()}, so it may have run. Send it again only if it did "
        "not: inside allow_duplicate(), or with RetryPolicy(duplicate_guard='label')"
    )
    return verdict(Outcome.DUPLICATE_HELD, detail=detail, error_kind=DUPLICATE_HELD_KIND)


class GuardTable:
    """A transport's memory of the UNSAFE tool calls that may have run, per server.

    Args:
        mode: what is done with a repeat (``DuplicateGuard``).
        window: seconds a call that may have run is remembered.
        capacity: how many such calls are remembered (the oldest forgotten first).
    """

    def __init__(
        self,
        mode: DuplicateGuard = DuplicateGuard.HOLD,
        window: float = 600.0,
        capacity: int = 1024,
    ) -> None:
        self.mode = mode
        self.window = window
        self._capacity = capacity
        self._calls: OrderedDict[tuple[str, str], tuple[float, EarlierCall]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """How many calls that may have run are remembered now (expired ones included until
        the next look or settle)."""
        return len(self._calls)

    def guards(self, facts: RequestFacts, idempotency: Idempotency) -> bool:
        """Whether this message is one the guard watches: a request (``watches``)."""
        return facts.id is not None and self.watches(facts.method, idempotency)

    def watches(self, method: str, idempotency: Idempotency) -> bool:
        """Whether a request of ``method`` is one the guard watches: a tool call of an UNSAFE
        tool (a transport remembers the answer per tool: ``CallContext.request_kind``)."""
        return idempotency is _UNSAFE and method == "tools/call" and self.mode is not _OFF

    def look(
        self, server: str | ServerKey, digest: Digest, consent: bool, now: float
    ) -> Duplicate | None:
        """The earlier call this one repeats, with what to do, or None (the common case:
        nothing remembered, looked at without the lock, the server key or the digest)."""
        if not self._calls:
            return None
        key = (str(server), str(digest))
        with self._lock:
            self._expire(now)
            entry = self._calls.get(key)
        if entry is None:
            return None
        if consent:
            return Duplicate(entry[1], Verdict.ALLOWED)
        if self.mode is DuplicateGuard.LABEL:
            return Duplicate(entry[1], Verdict.LABELLED)
        return Duplicate(entry[1], Verdict.HELD)

    def settled(
        self,
        server: str | ServerKey,
        fixed: Fixed,
        attempts: Sequence[AttemptValues | Seen],
        final: Classification,
        *,
        session_id: str | None,
        now: float,
    ) -> None:
        """A watched call (which began as ``fixed`` says) ended: remember it if it may have
        run, forget the earlier one if it was answered; a call never sent (held, refused)
        changes nothing (the server key and the digest are worked out only when something
        is remembered or forgotten)."""
        if final.outcome is _SUCCESS and not self._calls:  # the common case: nothing to do
            return
        delivery = call_delivery(attempts)
        if delivery is Delivery.NOT_SENT or (delivery is Delivery.ANSWERED and not self._calls):
            return
        facts = fixed.facts
        key = (str(server), str(facts.identity))
        with self._lock:
            if delivery is Delivery.ANSWERED:
                self._calls.pop(key, None)
                return
            earlier = EarlierCall(
                facts.id,
                fixed.started_at,
                delivery,
                str(final.outcome),
                None if final.error_kind is None else str(final.error_kind),
                final.detail,
                session_id,
            )
            self._calls[key] = (now, earlier)
            self._calls.move_to_end(key)
            while len(self._calls) > self._capacity:
                self._calls.popitem(last=False)
            self._expire(now)

    def _expire(self, now: float) -> None:
        """Forget the calls remembered longer than the window (oldest first; lock held)."""
        calls = self._calls
        while calls:
            remembered_at = next(iter(calls.values()))[0]
            if now - remembered_at <= self.window:
                return
            calls.popitem(last=False)
