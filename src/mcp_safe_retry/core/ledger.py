"""What one call leaves behind: its attempts' record (snapshots a response or an exception
finds through a RecordRef), the notifications its hooks are owed, its entry in the history.

``Books`` is the part a ``call.Call`` holds to keep books rather than decide: the call tells
it each attempt as it ends and when the call is over; it never decides anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from .attempt_kinds import AttemptKind
from .decision import Decision
from .extensions import RECORD_ATTRIBUTE
from .hedge_copies import Copy, CopyKind
from .hooks import Hook, Notice
from .jsonrpc import JSON, RequestId
from .observed import LEARNED_METHODS, client_info
from .outcomes import NOT_FAILURES, Classification, Outcome
from .records import Attempt, CallRecord, Fixed, LazyRecord, RetryOrigin, Seen, target
from .tasks import TERMINAL, TaskLink, TaskOrigin

if TYPE_CHECKING:
    from .context import CallContext
    from .events import Head
    from .listings import ListingKey
    from .servers import ServerKey
    from .stream import StreamTracker

__all__ = [
    "Books",
    "RecordRef",
    "Snapshot",
    "attempt_number",
]


_new = tuple.__new__  # a named tuple from its values in order, without a keyword call
_REDIRECT = Outcome.REDIRECT
_TASK_CREATED = Outcome.TASK_CREATED
_RPC_SUCCESS = Outcome.RPC_SUCCESS


class _Taken(NamedTuple):
    fixed: Fixed
    attempts: list[Seen]  # the books' list: appended to, never changed in place
    size: int  # how many of them the snapshot holds
    final: Classification | None  # the call's verdict, once it has one
    now: float  # when it was taken (the call's clock)
    session: str | None  # the record's session then


class Snapshot(_Taken, LazyRecord):
    """The record of a call as it was when an attempt ended: what changes as a call goes on
    (how many attempts, the verdict, the time, the session), kept as a tuple with what
    never changes (``Fixed``); the record is built from them when first read (``get``),
    then kept.

    The books only ever append to their list of attempts (a hedged call's sorted list and
    an amended last attempt are new lists), so the first ``size`` are as they were.
    Equal only to itself, as a history replaces it."""

    _record: CallRecord | None = None

    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__

    def get(self) -> CallRecord:
        record = self._record
        if record is None:
            record = self._record = _built(self)  # two threads: equal values
        return record


def _built(snapshot: Snapshot) -> CallRecord:
    """The record ``snapshot`` stands for."""
    fixed = snapshot.fixed
    facts = fixed.facts
    final = snapshot.final
    start = fixed.start
    return CallRecord(
        method=facts.method,
        tool=facts.tool,
        request_id=facts.id,
        idempotency=fixed.idempotency,
        attempts=tuple(Attempt(*a.values(start)) for a in snapshot.attempts[: snapshot.size]),
        classification=final,
        complete=final is not None,
        client=client_info(facts) or fixed.client,
        protocol_version=fixed.protocol_version,
        session_id=snapshot.session,
        scenario=fixed.scenario,
        arguments_digest=str(facts.identity),
        started_at=fixed.started_at,
        duration=max(0.0, snapshot.now - start),
        duplicate_of=fixed.duplicate,
        task=_task(fixed, final),
        ledger=fixed.ledger,
    )


def _task(fixed: Fixed, final: Classification | None) -> TaskLink | None:
    """The record's task: the one its answer names (a task created, a poll's), with the
    call that created it as the request's task said (``Fixed.task``); else the request's."""
    named = fixed.task
    if final is None or final.task_id is None:
        return named
    return TaskLink(final.task_id, final.task_status, None if named is None else named.created_by)


class RecordRef:
    """Where a response (or the exception that ends a call) finds the newest snapshot of
    its call's record: the call's books themselves (``Books``), asked when read, so handing
    one on costs neither a snapshot nor an object."""

    __slots__ = ()

    @property
    def snapshot(self) -> LazyRecord:
        raise NotImplementedError

    @property
    def current(self) -> CallRecord:
        return self.snapshot.get()


class Books(RecordRef):
    """The books of one call: its attempts, the newest snapshot of its record, and what the
    hooks have yet to hear (``owed``)."""

    # What most calls never change, as class-level defaults: fewer stores per call.
    previous: LazyRecord | None = None  # the snapshot a resumption replaces in the history
    # A list read (core/listings.py): which read it is, and the last good answer served in
    # place of its failure, if one was.
    listing: ListingKey | None = None
    stale: dict[str, Any] | None = None
    # A guarded call (core/guard.py): its claim in the ledger, and whether its caller
    # stopped waiting for its answer (``Observed.caller_gone``).
    owner: str = ""
    unseen: bool = False
    watched_in: tuple[str | None] | None = None  # the session it was watched in, if it was
    joined: object = None  # a re-send that joined: the earlier call's answer (core/guard.py)
    stream: StreamTracker | None = None  # a guarded call's SSE answer, while it streams

    def gave_up(self) -> None:
        """The caller stopped waiting for this guarded call (``Observed.caller_gone``): an
        answer that still comes ran unseen, and is kept for a re-send to join."""
        self.unseen = True
        if self.stream is not None:
            self.stream.keep_message()

    _snapshot: LazyRecord | None = None
    _pending: list[Notice] | None = None  # see owed()

    def __init__(
        self,
        context: CallContext,
        fixed: Fixed,
        session: str | None,
        guarded: ServerKey | None,
    ) -> None:
        """The books of a call that began as ``fixed`` says, in ``session``; ``guarded``:
        the server key of a call the duplicate guard (core/guard.py) watches."""
        self._context = context
        self.fixed = fixed  # what the record says that never changes
        self.session = session  # the session of the call's record (the first one seen)
        self._guarded = guarded
        self.attempts: list[Seen] = []

    @property
    def start(self) -> float:
        """When the call's first send went out (monotonic: the call's clock)."""
        return self.fixed.start

    @property
    def ref(self) -> RecordRef:
        """Where the newest snapshot of this call's record is kept: the books."""
        return self

    @property
    def snapshot(self) -> LazyRecord:
        """The newest snapshot of the record (one taken now if none was yet)."""
        snapshot = self._snapshot
        if snapshot is None:
            snapshot = self._snapshot = self._take(None, self.start)
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

    def ended(
        self,
        attempt: Seen,
        head: Head | None,
        final: Classification | None,
        now: float,
        wire_id: RequestId | None,
        *,
        message: JSON = None,
        hedged: bool = False,
        amend: bool = False,
    ) -> None:
        """Keep an attempt that ended and take the snapshot after it; ``final``: the call's
        verdict when the call ends with it (else None): then the transport learns what its
        answer (``message``) tells and the books are closed. The hooks are owed both.

        A hedged call's attempts are numbered as their copies were sent; the record's
        session is the first one an answer named. ``amend``: ``attempt`` replaces the last
        one (``amended``), and the hooks, told of that one already, hear of the call only."""
        attempts = self.attempts
        if hedged:  # a new list: the snapshots taken keep theirs as it was
            attempts = self.attempts = sorted((*attempts, attempt), key=attempt_number)
        elif amend:  # a new list too
            attempts = self.attempts = [*attempts[:-1], attempt]
        else:
            attempts.append(attempt)
        session = self.session
        if session is None and head is not None and head.session_id:
            session = self.session = head.session_id
        fixed = self.fixed
        snapshot = _new(Snapshot, (fixed, attempts, len(attempts), final, now, session))
        self._snapshot = snapshot
        context = self._context
        listeners = context.listeners(attempt)
        if listeners and not amend:
            self._tell(listeners, snapshot, attempt=True)
        if final is None:
            return
        # The call ends: what its answer tells, the duties of its end, its history entry.
        facts = fixed.facts
        if facts.method in LEARNED_METHODS:
            context.observed.learn(facts, final, message, session)
        if self.listing is not None:  # a list read: its last good answer is kept
            self._keep(final, message)
            if final.outcome not in NOT_FAILURES and self.stale is None:  # none to serve
                context.guard.follow_up_failed(self.listing.server, now)
        if final.task_id is not None:  # a task answer (the Tasks extension): kept for its polls
            self._task(final, fixed)
        if facts.id is not None:
            if wire_id is not facts.id:
                context.observed.settled(session, facts.id)
            outcome = final.outcome
            if outcome is not _REDIRECT:  # a hop: the request sent on to its Location
                context.detector.finished(facts.identity, outcome not in NOT_FAILURES, now)
            if self._guarded is not None:
                if self.watched_in is not None:
                    context.observed.watching(self.watched_in[0], facts.id, None)
                    context.guard.ledger.live(self.owner, None)
                context.guard.settled(
                    self._guarded,
                    fixed,
                    attempts,
                    final,
                    owner=self.owner,
                    unseen=self.unseen,
                    session_id=session,
                    now=now,
                    message=message,
                )
        previous = self.previous
        if previous is not None:
            self.previous = None
        context.history.keep(snapshot, previous)
        if listeners:
            self._tell(listeners, snapshot, attempt=False)

    def _keep(self, final: Classification, message: JSON) -> None:
        """Keep a list read's good answer (core/listings.py)."""
        listing = self.listing
        if listing is None or final.outcome is not _RPC_SUCCESS or not isinstance(message, dict):
            return
        result = message.get("result")
        if isinstance(result, dict):
            self._context.listings.keep(listing, result, self._context.wall_clock())

    def _task(self, final: Classification, fixed: Fixed) -> None:
        """Keep what a task answer says: who created the task, its last status."""
        task_id, tasks = final.task_id, self._context.tasks
        if task_id is None:
            return
        if final.outcome is _TASK_CREATED:
            origin = TaskOrigin(fixed.facts.id, fixed.facts.tool, fixed.started_at)
            status = final.task_status or "working"
            guarded = self._guarded
            held = None  # an UNSAFE call is held while its task runs (core/guard.py)
            if guarded is not None and self.owner and status not in TERMINAL:
                held = (str(guarded), str(fixed.facts.identity), self.owner)
            tasks.created(task_id, origin, status, held)
        elif final.task_status is not None:
            ended = tasks.polled(task_id, final.task_status)
            if ended is not None:  # the task of an UNSAFE call ended: it is not held now
                self._context.guard.task_ended(*ended, now=self._context.clock())

    def amended(self, stop: Decision, now: float, wire_id: RequestId | None) -> None:
        """The retry the last attempt planned is never sent: the call ends with ``stop``."""
        last = self.attempts[-1]
        # The snapshots taken keep the attempt as it was (``ended`` makes a new list).
        stopped = last._replace(decision=stop)
        self.ended(stopped, None, last.classification, now, wire_id, amend=True)

    def reopened(self) -> None:
        """A resumption: the record it ends with replaces this one in the history."""
        self.previous = self._snapshot

    def copy_ended(
        self,
        copy: Copy,
        origin: RetryOrigin,
        classification: Classification,
        head: Head | None,
        error_kind: str | None,
        *,
        sent_session: str | None,
    ) -> None:
        """Add the attempt of a copy that decided nothing (it failed while others flew, or
        lost): its fate is the copy's state."""
        now = self._context.clock()
        attempt = Seen(
            number=copy.number,
            retry_origin=origin,
            wire_id=copy.wire_id,
            classification=classification,
            head=head,
            error_kind=error_kind,
            delay=0.0,
            retry_after=None,
            decision=None,
            sent_at=copy.sent_at,
            ended_at=now,
            kind=AttemptKind.HEDGE if copy.kind is CopyKind.HEDGE else AttemptKind.POST,
            session_id=sent_session,
            fate=str(copy.state),
        )
        self.ended(attempt, head, None, now, None, hedged=True)

    def _tell(self, listeners: tuple[Hook, ...], snapshot: LazyRecord, *, attempt: bool) -> None:
        """Keep a notification for the shell to tell (an attempt's end, or else the call's)."""
        if self._pending is None:
            self._pending = []
        self._pending.append((listeners, snapshot, attempt))

    def _take(self, final: Classification | None, now: float) -> Snapshot:
        """The record's values as they are now (the record is built when read)."""
        attempts = self.attempts
        return _new(Snapshot, (self.fixed, attempts, len(attempts), final, now, self.session))


def attempt_number(attempt: Seen) -> int:
    """The sort key of a hedged call's attempts: numbered as their copies were sent."""
    return attempt.number
