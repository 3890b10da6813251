"""Attempt history: what was sent, what came back and what was decided, as plain values."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections import deque
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple

import attrs

from .attempt_kinds import AttemptKind
from .decision import Decision
from .delivery import Delivery, delivery_of
from .idempotency import Idempotency
from .jsonrpc import RequestFacts, RequestId
from .live import Live
from .outcomes import Classification

if TYPE_CHECKING:
    from .duplicate import Duplicate
    from .events import Head
    from .tasks import TaskLink

__all__ = [
    "Attempt",
    "AttemptValues",
    "CallRecord",
    "Fixed",
    "History",
    "LazyRecord",
    "RetryOrigin",
    "Seen",
    "target",
]


_POSTS = frozenset({AttemptKind.POST, AttemptKind.HEDGE})


class RetryOrigin(StrEnum):
    """Who sent an attempt: the first send, this engine, the application, or a person."""

    NONE = "none"
    SDK = "sdk"
    APPLICATION = "application"
    MANUAL = "manual"


@attrs.frozen
class Attempt:
    """One attempt of a call (an HTTP POST, a resuming GET, or a re-initialise) and how it
    ended.

    ``delay`` is the time slept before it; ``elapsed`` the seconds from the call's start to
    the moment it was sent; ``decision`` what followed it (None while it is still streaming);
    ``delivery`` whether the server can have run its request (``core/delivery.py``).
    """

    number: int
    retry_origin: RetryOrigin
    wire_id: RequestId | None
    classification: Classification
    status: int | None = None
    content_type: str | None = None
    error_kind: str | None = None  # an ErrorKind
    delay: float = 0.0
    retry_after: float | None = None
    decision: Decision | None = None
    elapsed: float = 0.0
    duration: float = 0.0
    kind: str = AttemptKind.POST  # RESUME: the client's GET with Last-Event-ID, not a POST
    # The Mcp-Session-Id it was sent with (a REINITIALISE: the session it opened); like
    # CallRecord.session_id, never in to_dict().
    session_id: str | None = None
    fate: str | None = None  # a hedged call's copy: won, failed, lost or abandoned
    delivery: Delivery = attrs.field(
        default=attrs.Factory(
            lambda a: delivery_of(a.classification, a.error_kind, a.kind), takes_self=True
        )
    )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types only."""
        c = self.classification
        return {
            "number": self.number,
            "kind": self.kind,
            "retryOrigin": str(self.retry_origin),
            "wireId": self.wire_id,
            "httpStatus": self.status,
            "contentType": self.content_type,
            "layer": str(c.layer),
            "outcome": str(c.outcome),
            "errorCode": c.code,
            "errorKind": self.error_kind,
            "detail": c.detail,
            "delay": round(self.delay, 6),
            "retryAfter": self.retry_after,
            "decision": str(self.decision.action) if self.decision else None,
            "reason": str(self.decision.reason) if self.decision else None,
            "elapsedMs": round(self.elapsed * 1000, 3),
            "durationMs": round(self.duration * 1000, 3),
            "fate": self.fate,
            "delivery": str(self.delivery),
        }


@attrs.frozen
class CallRecord:
    """One logical JSON-RPC call and all its attempts.

    A record is a snapshot: while an SSE answer is still streaming ``complete`` is False and
    ``get_record`` returns the newest snapshot.
    """

    method: str
    tool: str | None
    request_id: RequestId | None
    idempotency: Idempotency
    attempts: tuple[Attempt, ...] = ()
    classification: Classification | None = None
    complete: bool = False
    client: str | None = None
    protocol_version: str | None = None
    session_id: str | None = None
    scenario: str | None = None
    arguments_digest: str = ""
    started_at: float = 0.0  # wall-clock Unix time of the first send
    duration: float = 0.0  # seconds from the first send to the newest attempt's end
    # The earlier call this one repeats while it may have run, and what the duplicate guard
    # did (core/guard.py); None for every other call.
    duplicate_of: Duplicate | None = None
    # The Tasks extension (core/tasks.py): the task a tools/call was answered with, or the
    # one a tasks/* request names, with the call that created it; None for every other call.
    task: TaskLink | None = None
    # The ledger that decided whether a call the duplicate guard watches was sent
    # ("process", "redis", "process (redis unreachable: ...)"); None for every other call.
    ledger: str | None = None

    @property
    def post_count(self) -> int:
        """POSTs of the call's request sent, hedges included (a resumption GET and a
        re-initialise are attempts, not POSTs of the call)."""
        return sum(1 for a in self.attempts if a.kind in _POSTS)

    @property
    def http_statuses(self) -> tuple[int, ...]:
        return tuple(a.status for a in self.attempts if a.status is not None)

    @property
    def retry_origin(self) -> RetryOrigin:
        """The origin of the last attempt."""
        return self.attempts[-1].retry_origin if self.attempts else RetryOrigin.NONE

    @property
    def outcome(self) -> str | None:
        return str(self.classification.outcome) if self.classification else None

    def to_dict(self) -> dict[str, Any]:
        """The diagnostic record: plain JSON types, ready for ``json.dumps``."""
        c = self.classification
        return {
            "client": self.client,
            "protocolVersion": self.protocol_version,
            "scenario": self.scenario,
            "method": self.method,
            "tool": self.tool,
            "idempotency": str(self.idempotency),
            "postCount": self.post_count,
            "httpStatuses": list(self.http_statuses),
            "jsonrpc": {"id": self.request_id, "errorCode": c.code if c else None},
            "resultType": c.result_type if c else None,
            "layer": str(c.layer) if c else None,
            "outcome": self.outcome,
            "retryOrigin": str(self.retry_origin),
            "complete": self.complete,
            "startedAt": self.started_at,
            "durationMs": round(self.duration * 1000, 3),
            "attempts": [a.to_dict() for a in self.attempts],
            "duplicateOf": None if self.duplicate_of is None else self.duplicate_of.to_dict(),
            "task": None if self.task is None else self.task.to_dict(),
            "servedStale": self.served_stale,
            "ledger": self.ledger,
        }

    @property
    def served_stale(self) -> dict[str, Any] | None:
        """A list read whose failure was answered with its last good answer
        (core/listings.py): that answer's age; None for every other call."""
        c = self.classification
        if c is None or c.stale_age is None:
            return None
        return {"ageMs": round(c.stale_age * 1000, 3)}


class Fixed(NamedTuple):
    """What a call's record says that never changes once the call began (the books keep
    it, and so does each snapshot: a snapshot never holds the books, so no call's books and
    snapshots make a cycle for the garbage collector)."""

    facts: RequestFacts
    idempotency: Idempotency
    # The client the transport knew as the call began: an ``initialize`` names its own,
    # read from its request when the record is built (``ledger``).
    client: str | None
    protocol_version: str | None
    scenario: str | None
    start: float  # monotonic: the call's first send
    started_at: float  # wall clock, for the record
    duplicate: Duplicate | None
    task: TaskLink | None = None  # a tasks/* request's task, and the call that created it
    ledger: str | None = None  # the ledger that decided on a guarded call (core/guard.py)


class AttemptValues(NamedTuple):
    """An Attempt's values in its field order: what the engine keeps per attempt. The
    Attempt itself is built only when a record is read (most never are): ``Attempt(*values)``."""

    number: int
    retry_origin: RetryOrigin
    wire_id: RequestId | None
    classification: Classification
    status: int | None
    content_type: str | None
    error_kind: str | None
    delay: float
    retry_after: float | None
    decision: Decision | None
    elapsed: float
    duration: float
    kind: str
    session_id: str | None = None
    fate: str | None = None


class Seen(NamedTuple):
    """What an attempt left when it ended, as it was seen: its facts read then, nothing
    worked out from them (what the engine keeps per attempt). Its ``AttemptValues`` (the
    head's status and content type, the times since the call's start) are worked out only
    when a record is read (``values``), most never are. The duplicate guard reads
    ``kind``, ``classification`` and ``error_kind``, as an ``AttemptValues`` has them."""

    number: int
    retry_origin: RetryOrigin
    wire_id: RequestId | None
    classification: Classification
    head: Head | None  # the answer's head (None: no answer)
    error_kind: str | None
    delay: float
    retry_after: float | None
    decision: Decision | None
    sent_at: float  # the call's clock
    ended_at: float  # the call's clock
    kind: str
    session_id: str | None = None
    fate: str | None = None

    def values(self, start: float) -> AttemptValues:
        """The attempt's values, for a call that started at ``start`` (the call's clock)."""
        head = self.head
        sent_at = self.sent_at
        duration = self.ended_at - sent_at
        return AttemptValues(
            self.number,
            self.retry_origin,
            self.wire_id,
            self.classification,
            None if head is None else head.status,
            None if head is None else head.content_type,
            self.error_kind,
            self.delay,
            self.retry_after,
            self.decision,
            sent_at - start,  # elapsed
            duration if duration > 0.0 else 0.0,
            self.kind,
            self.session_id,
            self.fate,
        )


class LazyRecord:
    """A CallRecord built on first read (``get``) and kept: what the history holds and the
    hooks are handed. A call's books take one when an attempt ends (``ledger.Snapshot``:
    the few facts that change, beside the call's fixed ones, built into the record when
    read); ``of`` wraps a record already built."""

    __slots__ = ()

    def get(self) -> CallRecord:
        raise NotImplementedError

    @staticmethod
    def of(record: CallRecord) -> LazyRecord:
        """A snapshot that is already built."""
        return _Built(record)


class _Built(LazyRecord):
    __slots__ = ("_record",)

    def __init__(self, record: CallRecord) -> None:
        self._record = record

    def get(self) -> CallRecord:
        return self._record


class History(Live):
    """The newest finished call records of a transport, bounded, safe across threads.

    Shared, never copied: ``copy.deepcopy`` returns this History, so a framework that
    deep-copies a client factory still sends the records here. Pickled and loaded in
    another process, it is a fresh, empty History of the same size there (records cannot
    travel back); see ``mcp_safe_retry.core.live``.
    """

    def __init__(self, maxlen: int = 1000) -> None:
        if maxlen < 1:
            raise ValueError("maxlen must be >= 1")
        self._records: deque[LazyRecord] = deque(maxlen=maxlen)
        self._lock = threading.Lock()

    def append(
        self, record: CallRecord | LazyRecord, *, replacing: LazyRecord | None = None
    ) -> None:
        """Add a finished record; ``replacing`` an earlier snapshot of the same call (one
        that was resumed) moves it to the end instead of keeping both."""
        self.keep(record if isinstance(record, LazyRecord) else _Built(record), replacing)

    def keep(self, entry: LazyRecord, replacing: LazyRecord | None = None) -> None:
        """``append`` for a snapshot, as a call's books add theirs (no record to wrap)."""
        with self._lock:
            if replacing is not None:
                # It may already have been pushed out of the bounded history.
                with contextlib.suppress(ValueError):
                    self._records.remove(replacing)
            self._records.append(entry)

    def records(self) -> list[CallRecord]:
        """Oldest first, newest last."""
        with self._lock:
            entries = list(self._records)
        return [entry.get() for entry in entries]

    def last(self) -> CallRecord | None:
        with self._lock:
            entry = self._records[-1] if self._records else None
        return entry.get() if entry is not None else None

    def clear(self) -> None:
        with self._lock:
            self._records.clear()

    def __len__(self) -> int:
        return len(self._records)

    @property
    def maxlen(self) -> int:
        return self._records.maxlen or 0

    def _recipe(self) -> functools.partial[History]:
        return functools.partial(History, self.maxlen)


def target(record: CallRecord) -> str:
    """What a call was for, as logs, spans and reports name it: ``"tools/call search"``, or
    the method alone (also for a tool named by an empty string)."""
    return f"{record.method} {record.tool}" if record.tool else record.method
