"""What one call leaves behind: its attempts' record (snapshots a response or an exception
finds through a RecordRef), the notifications its hooks are owed, its entry in the history.

``Ledger`` is the part of ``call.Call`` that keeps books rather than decides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .classify import NOT_FAILURES, Classification, Outcome
from .hedge import Copy, CopyKind
from .hooks import Hook
from .jsonrpc import RequestFacts, RequestId
from .kinds import AttemptKind
from .policy import Idempotency
from .records import AttemptValues, CallRecord, LazyRecord, RecordValues, RetryOrigin, target

if TYPE_CHECKING:
    from .context import CallContext
    from .duplicate import Duplicate
    from .events import Head

__all__ = [
    "RECORD_ATTRIBUTE",
    "RECORD_EXTENSION",
    "Ledger",
    "Notice",
    "RecordRef",
    "attempt_number",
]

RECORD_EXTENSION = "mcp_safe_retry.record"
RECORD_ATTRIBUTE = "_mcp_safe_retry_record"  # on the exception that ends a call

Notice = tuple[tuple[Hook, ...], LazyRecord, bool]
"""Hooks owed a notification: who, the snapshot, and True for an attempt (else the call)."""


class RecordRef:
    """Where a response (or the exception that ends a call) finds the newest snapshot of
    its call's record (asked of the call when read: handing one on costs no snapshot)."""

    __slots__ = ("_ledger",)

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger

    @property
    def snapshot(self) -> LazyRecord:
        return self._ledger.latest()

    @property
    def current(self) -> CallRecord:
        return self._ledger.latest().get()


class Ledger:
    """The books of one call: its attempts, the newest snapshot of its record, and what the
    hooks have yet to hear."""

    # Set by Call.__init__.
    _engine: CallContext
    facts: RequestFacts
    idempotency: Idempotency
    _attempts: list[AttemptValues]
    _wire_id: RequestId | None
    _session: str | None
    _client: str | None
    _protocol_version: str | None
    _started_at: float
    _start: float
    _in_flight: bool
    _sent_session: str | None
    # What most calls never change, as class-level defaults: fewer stores per call.
    _previous: LazyRecord | None = None  # the snapshot a resumption replaces in the history
    _snapshot: LazyRecord | None = None
    _pending: list[Notice] | None = None  # see owed()
    # The duplicate guard (core/guard.py): the server key of a call it watches, and the
    # earlier call this one repeats while that may have run.
    _guarded: str | None = None
    _duplicate: Duplicate | None = None
    done = False

    @property
    def ref(self) -> RecordRef:
        """Where the newest snapshot of this call's record is kept."""
        # A new one each time, never kept here: a call holding a ref that holds the call
        # would be a cycle, left for the garbage collector on every call.
        return RecordRef(self)

    def latest(self) -> LazyRecord:
        """The newest snapshot of the record (one taken now if none was yet)."""
        snapshot = self._snapshot
        if snapshot is None:
            snapshot = self._take_snapshot(None, self._start)
        return snapshot

    def annotated(self, exc: BaseException) -> BaseException:
        """``exc`` with the call's record attached (``get_record(exc)``) and a note that
        tells the attempts in a traceback."""
        self.annotate(exc)
        return exc

    def annotate(self, exc: BaseException) -> None:
        """Attach the call's record to the exception that ends it (see ``annotated``)."""
        if getattr(exc, RECORD_ATTRIBUTE, None) is not None:
            return
        setattr(exc, RECORD_ATTRIBUTE, self.ref)
        record = self.ref.current
        tried = ", ".join(
            (a.error_kind or str(a.status or a.classification.outcome)) for a in record.attempts
        )
        last = record.attempts[-1].decision if record.attempts else None
        exc.add_note(
            f"mcp-safe-retry: {target(record)} (id {record.request_id!r}, "
            f"{record.idempotency}): {len(record.attempts)} attempt(s) [{tried}], then "
            f"{last.reason if last else 'stop'}"
        )

    def owed(self) -> list[Notice]:
        """The notifications the hooks are owed since last asked (and forgets them): for
        each, the hooks, the snapshot, and whether an attempt ended (else the call did).

        The shell tells the hooks (``instrumentation.hooks.publish``) once the events are
        handled: before a backoff, and when the answer is handed on or the call ends; never
        while the call decides.
        """
        pending = self._pending
        if pending is None:
            return []
        self._pending = None
        return pending

    def record_copy(
        self,
        copy: Copy,
        origin: RetryOrigin,
        classification: Classification,
        head: Head | None,
        error_kind: str | None,
    ) -> None:
        """Add the attempt of a copy that decided nothing (it failed while others flew, or
        lost): its fate is the copy's state."""
        now = self._engine.clock()
        attempt = AttemptValues(
            number=copy.number,
            retry_origin=origin,
            wire_id=copy.wire_id,
            classification=classification,
            status=head.status if head else None,
            content_type=head.content_type if head else None,
            error_kind=error_kind,
            delay=0.0,
            retry_after=None,
            decision=None,
            elapsed=copy.sent_at - self._start,
            duration=max(0.0, now - copy.sent_at),
            kind=AttemptKind.HEDGE if copy.kind is CopyKind.HEDGE else AttemptKind.POST,
            session_id=self._sent_session,
            fate=str(copy.state),
        )
        self._attempts.append(attempt)
        self._attempts.sort(key=attempt_number)
        self._in_flight = False  # none adopted: an abandoned call adds no attempt of its own
        if head is not None and head.session_id and self._session is None:
            self._session = head.session_id
        snapshot = self._take_snapshot(None, now)
        listeners = self._engine.listeners()
        if listeners:
            self._tell(listeners, snapshot, attempt=True)

    def _tell(self, listeners: tuple[Hook, ...], snapshot: LazyRecord, *, attempt: bool) -> None:
        """Keep a notification for ``publish`` (an attempt's end, or else the call's)."""
        if self._pending is None:
            self._pending = []
        self._pending.append((listeners, snapshot, attempt))

    def _finish(
        self,
        snapshot: LazyRecord,
        classification: Classification,
        now: float,
        listeners: tuple[Hook, ...],
    ) -> None:
        engine = self._engine
        facts = self.facts
        if facts.id is not None:
            if self._wire_id is not facts.id:
                engine.observed.settled(self._session, facts.id)
            outcome = classification.outcome
            if outcome is not Outcome.REDIRECT:  # a hop: the request sent on to its Location
                engine.detector.finished(facts.identity, outcome not in NOT_FAILURES, now)
            if self._guarded is not None:
                engine.guard.settled(
                    self._guarded,
                    facts.identity,
                    self._attempts,
                    classification,
                    request_id=facts.id,
                    started_at=self._started_at,
                    session_id=self._session,
                    now=now,
                )
        engine.history.append(snapshot, replacing=self._previous)
        self._previous = None
        if listeners:
            self._tell(listeners, snapshot, attempt=False)

    def _take_snapshot(self, final: Classification | None, now: float) -> LazyRecord:
        """Freeze the record's values as they are now (the record is built when read)."""
        facts = self.facts
        snapshot = LazyRecord(
            RecordValues(
                method=facts.method,
                tool=facts.tool,
                request_id=facts.id,
                idempotency=self.idempotency,
                attempts=tuple(self._attempts),
                classification=final,
                complete=final is not None,
                client=self._client,
                protocol_version=self._protocol_version,
                session_id=self._session,
                scenario=self._engine.scenario,
                arguments_digest=facts.identity,  # worked out when the record is built
                started_at=self._started_at,
                duration=max(0.0, now - self._start),
                duplicate_of=self._duplicate,
            )
        )
        self._snapshot = snapshot
        return snapshot


def attempt_number(attempt: AttemptValues) -> int:
    """The sort key of a hedged call's attempts: numbered as their copies were sent."""
    return attempt.number
