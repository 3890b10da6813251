"""One per-call state machine, sans I/O: the shells send, sleep and read; this decides.

Data flows one way: a shell hands the engine facts (a request body, a response head and
body, a network error) and gets back what to do next. Nothing here touches a socket, sleeps
or imports an HTTP library.
"""

from __future__ import annotations

import itertools
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import attrs

from ..instrumentation.hooks import Hook, notify_attempt, notify_call
from ..instrumentation.logs import LoggingHook
from .budget import Budget, RetryBudget
from .classify import (
    NOT_FAILURES,
    Classification,
    Outcome,
    classify_answer,
    media_type,
    verdict,
)
from .contain import CONTAINED_OUTCOMES, contained_error
from .jsonrpc import (
    JSON,
    RequestFacts,
    RequestId,
    dumps,
    is_exact,
    loads,
    parse_request,
    same_id,
    with_id,
)
from .observed import LEARNED_METHODS, Observed, client_info
from .origin import ResendDetector, marked_origin
from .policy import (
    Action,
    Decision,
    Idempotency,
    Reason,
    RetryPolicy,
    decide,
    is_transient,
    parse_retry_after,
)
from .records import AttemptValues, CallRecord, History, LazyRecord, RetryOrigin
from .sse import DEFAULT_MAX_EVENT_BYTES, encode_event
from .stream import StreamTracker

__all__ = ["Call", "Engine", "Head", "RecordRef"]

RECORD_EXTENSION = "mcp_safe_retry.record"
RECORD_ATTRIBUTE = "_mcp_safe_retry_record"  # on the exception that ends a call
IDEMPOTENCY_EXTENSION = "mcp_safe_retry.idempotency"
"""A request extension (``"read"`` or ``"unsafe"``) that overrides the policy for one call."""
_LOGGING_HOOK = LoggingHook()


class Head(NamedTuple):
    """The parts of a response head the engine reads (a tuple: one is made per response)."""

    status: int
    content_type: str | None = None
    retry_after: str | None = None
    session_id: str | None = None
    encoded: bool = False  # a Content-Encoding: the body read is decoded, not as sent


@attrs.define
class RecordRef:
    """Where a response (or the exception that ends a call) finds the newest snapshot of
    its call's record."""

    snapshot: LazyRecord

    @property
    def current(self) -> CallRecord:
        return self.snapshot.get()


class Engine:
    """Per-transport state shared by its calls: policy, history, observers, id source."""

    def __init__(
        self,
        *,
        policy: RetryPolicy | None = None,
        history: History | None = None,
        hooks: Sequence[Hook] = (),
        clock: Callable[[], float] | None = None,
        wall_clock: Callable[[], float] = time.time,
        rand: Callable[[], float] | None = None,
        resend_window: float = 60.0,
        scenario: str | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        budget: Budget | None = None,
        contain_failures: bool = False,
    ) -> None:
        self.policy = policy if policy is not None else RetryPolicy()
        self.history = history if history is not None else History()
        # The built-in logging hook first: it is free while the "mcp_safe_retry" logger is off.
        self.hooks: tuple[Hook, ...] = (_LOGGING_HOOK, *hooks)
        self._user_hooks = bool(hooks)
        self.clock = clock if clock is not None else time.monotonic
        self.wall_clock = wall_clock
        self.rand = rand if rand is not None else secrets.SystemRandom().random
        self.detector = ResendDetector(resend_window)
        self.scenario = scenario
        self.max_event_bytes = max_event_bytes
        self.budget = budget if budget is not None else RetryBudget()
        self.contain_failures = contain_failures
        self.observed = Observed()
        self._lock = threading.Lock()  # the resumable calls
        self._resumable: OrderedDict[str, Call] = OrderedDict()
        self._prefix = secrets.token_hex(4)
        self._counter = itertools.count(1)

    def begin(
        self, body: bytes, headers: Mapping[str, str], extensions: Mapping[str, Any]
    ) -> Call | None:
        """Start a call for a POSTed JSON-RPC message; None when it is not one."""
        facts = parse_request(body)
        if facts is None:
            return None
        return Call(self, facts, headers, extensions)

    def resumed(self, last_event_id: str | None) -> Call | None:
        """The call whose broken stream a GET with this ``Last-Event-ID`` resumes, if any."""
        if not last_event_id:
            return None
        with self._lock:
            call = self._resumable.pop(last_event_id, None)
        if call is not None:
            call.reopen(last_event_id)
        return call

    def _await_resumption(self, event_id: str, call: Call) -> None:
        with self._lock:
            self._resumable[event_id] = call
            while len(self._resumable) > 256:
                self._resumable.popitem(last=False)

    def fresh_id(self) -> str:
        """A request id never used before (the spec forbids re-using one)."""
        return f"mcp-safe-retry-{self._prefix}-{next(self._counter)}"

    def listeners(self) -> tuple[Hook, ...]:
        """The hooks to tell now: none while only the logging hook is there and it is off
        (then no record needs to be built to be shown)."""
        if self._user_hooks or _LOGGING_HOOK.enabled():
            return self.hooks
        return ()


class Call:
    """The state of one logical call across its attempts."""

    # What most calls never change, as class-level defaults: fewer stores per call.
    _delay = 0.0
    _content: bytes | None = None  # the body to send instead of the caller's
    _message: JSON = None  # the last JSON answer read whole
    _message_source: bytes | None = None  # its body, if read without exact integers
    _head: Head | None = None  # the head of the SSE answer now flowing
    _in_flight = False
    _resuming = False
    _resume_id: str | None = None
    _previous: LazyRecord | None = None  # the snapshot a resumption replaces in the history
    _snapshot: LazyRecord | None = None
    _ref: RecordRef | None = None  # made on first use: most calls settle first
    done = False

    def __init__(
        self,
        engine: Engine,
        facts: RequestFacts,
        headers: Mapping[str, str],
        extensions: Mapping[str, Any],
    ) -> None:
        self._engine = engine
        self.facts = facts
        self._session = headers.get("mcp-session-id")
        observed = engine.observed
        self.idempotency = (
            Idempotency.UNSAFE
            if facts.id is None
            else _declared(extensions)
            or engine.policy.idempotency(facts.method, facts.tool, observed.read_only_tools)
        )
        now = engine.clock()
        self._start = self._sent_at = now
        self._wire_id: RequestId | None = facts.id
        if facts.method == "notifications/cancelled":
            self._content = observed.remap_cancellation(facts, self._session)
        origin = marked_origin(extensions)
        if origin is None:
            is_resend = facts.id is not None and engine.detector.is_resend(facts.digest, now)
            origin = RetryOrigin.APPLICATION if is_resend else RetryOrigin.NONE
        self._origin = origin
        self._attempts: list[AttemptValues] = []
        self._client = client_info(facts) or observed.client
        self._protocol_version = headers.get("mcp-protocol-version") or observed.protocol_version
        self._started_at = engine.wall_clock()

    @property
    def ref(self) -> RecordRef:
        """Where the newest snapshot of this call's record is kept."""
        if self._ref is None:
            snapshot = self._snapshot
            if snapshot is None:
                snapshot = self._take_snapshot(None, self._start)
            self._ref = RecordRef(snapshot)
        return self._ref

    # -- the shell asks -------------------------------------------------------------------

    @property
    def delay(self) -> float:
        """Seconds to wait before the next POST (0 for the first)."""
        return self._delay

    def next_send(self) -> bytes | None:
        """The next POST is made now (the first, or the retry just decided, after its delay).

        Returns:
            The body to send instead of the caller's (a retry's fresh id), or None.
        """
        self._sent_at = self._engine.clock()
        self._in_flight = True
        self._head = None
        return self._content

    def failed(self, kind: str, detail: str) -> bool:
        """A network error instead of a response; True if the call goes on with a retry."""
        classification = verdict(Outcome.NETWORK_ERROR, error_kind=kind, detail=detail[:200])
        return self._settle(classification, None, error_kind=kind).retry

    def wants_stream(self, head: Head) -> bool:
        """True when the answer is an SSE stream to pass through rather than read whole."""
        return (
            200 <= head.status < 300
            and not self.facts.is_notification
            and media_type(head.content_type)[0] == "text/event-stream"
        )

    def received(self, head: Head, body: bytes) -> tuple[bool, bytes | None]:
        """A whole response body arrived.

        Returns:
            Whether to retry, and a replacement body to hand on (None: hand on as it is).
        """
        facts = self.facts
        # Read without the huge-integer scan; _exact() re-reads if it is re-sent.
        classification, message = classify_answer(
            head.status,
            body,
            content_type=head.content_type,
            expected_id=None if facts.id is None else self._wire_id,
            method=facts.method,
            max_event_bytes=self._engine.max_event_bytes,
            want_message=self._wants_message(),
        )
        source = None
        if message is not None and media_type(head.content_type)[1] in (None, "utf-8", "utf8"):
            source = body
        retry_after = None
        if head.retry_after is not None and head.status in (429, 503):
            retry_after = parse_retry_after(head.retry_after, self._engine.wall_clock())
        decision = self._settle(classification, head, retry_after=retry_after, message=message)
        if decision.retry:
            return True, None
        self._message = message
        self._message_source = source
        return False, self._restore_id(message)

    def splice_event(self) -> bytes | None:
        """The last read answer as one SSE event for the caller's id, to end a stream that
        broke and was re-issued; None when that answer holds no JSON-RPC response."""
        message = self._message
        if not isinstance(message, dict) or ("result" not in message and "error" not in message):
            return None
        message = self._exact(message)
        if message.get("id") is not None and self.facts.id is not None:
            message = {**message, "id": self.facts.id}
        return encode_event(dumps(message))

    def stream(self, head: Head) -> StreamTracker:
        """An SSE answer begins; the shell feeds the returned tracker as bytes flow."""
        self._head = head
        assert self._wire_id is not None  # wants_stream() excludes notifications
        return StreamTracker(
            wire_id=self._wire_id,
            caller_id=self.facts.id if self.facts.id is not None else self._wire_id,
            method=self.facts.method,
            max_event_bytes=self._engine.max_event_bytes,
            want_message=self._wants_message(),
        )

    def _wants_message(self) -> bool:
        """Whether an answer must be read whole: to learn from it, or to restore the
        caller's id in it (a re-sent call). Otherwise a plain success may be recognised
        without building it."""
        return self.facts.method in LEARNED_METHODS or self._wire_id is not self.facts.id

    def reopen(self, last_event_id: str) -> None:
        """The client resumes this call's broken stream (a GET with Last-Event-ID)."""
        self._resume_id = last_event_id
        self.done = False
        self._in_flight = True
        self._resuming = True
        self._delay = 0.0
        self._sent_at = self._engine.clock()
        self._previous = self._snapshot

    def stream_ended(self, tracker: StreamTracker, error: tuple[str, str] | None = None) -> bool:
        """The SSE stream ended (``error``: kind and detail if it broke); True to re-issue."""
        if self.done:
            return False
        classification = tracker.classification
        if classification is None:
            detail = "stream ended before the response" if error is None else error[1][:200]
            classification = verdict(
                Outcome.STREAM_INCOMPLETE,
                detail=detail,
                error_kind=error[0] if error else None,
            )
        # A server that numbered its events lets the client resume with Last-Event-ID;
        # re-issuing on top of that would run the request twice.
        resume_from = None
        if tracker.classification is None:
            resume_from = tracker.last_event_id or self._resume_id
        decision = self._settle(
            classification,
            self._head,
            error_kind=error[0] if error else None,
            message=tracker.message,
            resumable=resume_from is not None,
        )
        if resume_from is not None:
            self._engine._await_resumption(resume_from, self)
        return decision.retry

    def contained(self, *, in_stream: bool = False) -> bytes | None:
        """The JSON-RPC error that stands for this call's failure, when failures are contained.

        Outside a stream only NETWORK_ERROR and STREAM_INCOMPLETE are contained (an HTTP
        error already is an answer); inside an SSE stream that holds no response, whatever
        ended the call is. None when containment is off or the call is a notification.
        """
        record = self.ref.current
        final = record.classification
        if not self._engine.contain_failures or self.facts.id is None or final is None:
            return None
        if not in_stream and final.outcome not in CONTAINED_OUTCOMES:
            return None
        body = contained_error(record, self.facts.id)
        return encode_event(body) if in_stream else body

    def annotate(self, exc: BaseException) -> None:
        """Attach the call's record to the exception that ends it (``get_record(exc)``) and
        add a note that tells the attempts in a traceback."""
        if getattr(exc, RECORD_ATTRIBUTE, None) is not None:
            return
        setattr(exc, RECORD_ATTRIBUTE, self.ref)
        record = self.ref.current
        tried = ", ".join(
            (a.error_kind or str(a.status or a.classification.outcome)) for a in record.attempts
        )
        last = record.attempts[-1].decision if record.attempts else None
        target = f"{record.method} {record.tool}" if record.tool else record.method
        exc.add_note(
            f"mcp-safe-retry: {target} (id {record.request_id!r}, {record.idempotency}): "
            f"{len(record.attempts)} attempt(s) [{tried}], then "
            f"{last.reason if last else 'stop'}"
        )

    def stream_closed(self, tracker: StreamTracker) -> None:
        """The caller closed the SSE answer; if its response had arrived, that is success
        (SDKs close a stream once they have the response), else the call was abandoned."""
        if self.done:
            return
        if tracker.classification is not None:
            self.stream_ended(tracker)
        else:
            self.abandoned(None)

    def abandoned(self, exc: BaseException | None) -> None:
        """The call ended without a verdict: the caller closed the stream early, or an
        exception (a cancellation, an error of the inner transport's own) ended it."""
        if self.done:
            return
        if exc is None:
            detail = "closed by the caller before the response"
        else:
            detail = f"ended by {type(exc).__name__}: {exc}"[:200]
        stop = Decision(Action.STOP, Reason.ABANDONED)
        now = self._engine.clock()
        if self._in_flight:
            if self._head is not None:  # an SSE answer was flowing
                ended = verdict(Outcome.STREAM_INCOMPLETE, detail=detail)
            else:
                kind = "internal" if isinstance(exc, Exception) else "cancelled"
                ended = verdict(Outcome.NETWORK_ERROR, detail=detail, error_kind=kind)
            self._record(
                stop,
                ended,
                head=self._head,
                error_kind=ended.error_kind,
                retry_after=None,
                message=None,
                now=now,
            )
            return
        # Between attempts (in the backoff): the planned retry is never sent.
        last = self._attempts[-1]
        self._attempts[-1] = last._replace(decision=stop)
        self.done = True
        snapshot = self._take_snapshot(last.classification, now)
        self._finish(snapshot, last.classification, now, self._engine.listeners())

    # -- bookkeeping --------------------------------------------------------------------

    def _settle(
        self,
        classification: Classification,
        head: Head | None,
        *,
        error_kind: str | None = None,
        retry_after: float | None = None,
        message: JSON = None,
        resumable: bool = False,
    ) -> Decision:
        engine = self._engine
        now = engine.clock()
        number = len(self._attempts) + 1
        decision = decide(
            engine.policy,
            idempotency=self.idempotency,
            classification=classification,
            attempt=number,
            elapsed=now - self._start,
            retry_after=retry_after,
            rand=engine.rand,
        )
        budget = engine.budget
        if self.facts.id is not None:
            budget.record(failed=is_transient(engine.policy, classification))
            if decision.retry and not budget.allow_retry():
                decision = Decision(Action.STOP, Reason.THROTTLED)
        if resumable or (decision.retry and self._resuming):
            # Resuming is the client's move (and a GET cannot be re-sent as the POST).
            decision = Decision(Action.STOP, Reason.RESUMABLE)
        return self._record(
            decision,
            classification,
            head=head,
            error_kind=error_kind,
            retry_after=retry_after,
            message=message,
            now=now,
        )

    def _record(
        self,
        decision: Decision,
        classification: Classification,
        *,
        head: Head | None,
        error_kind: str | None,
        retry_after: float | None,
        message: JSON,
        now: float,
    ) -> Decision:
        """Append the attempt that just ended, with what follows it, and tell the hooks."""
        engine = self._engine
        self._in_flight = False
        resuming = self._resuming
        attempt = AttemptValues(
            len(self._attempts) + 1,
            RetryOrigin.APPLICATION if resuming else self._origin,
            self._wire_id,
            classification,
            head.status if head else None,
            head.content_type if head else None,
            error_kind,
            self._delay,
            retry_after,
            decision,
            self._sent_at - self._start,
            max(0.0, now - self._sent_at),
            "resume" if resuming else "post",
        )
        self._attempts.append(attempt)
        self._resuming = False
        if head is not None and head.session_id and self._session is None:
            self._session = head.session_id
        if decision.retry:
            self._prepare_retry(decision)
        else:
            self.done = True
            engine.observed.learn(self.facts, classification, message)
        snapshot = self._take_snapshot(classification if self.done else None, now)
        listeners = engine.listeners()
        if listeners:
            record = snapshot.get()
            notify_attempt(listeners, record, record.attempts[-1])
        if self.done:
            self._finish(snapshot, classification, now, listeners)
        return decision

    def _prepare_retry(self, decision: Decision) -> None:
        engine = self._engine
        self._delay = decision.delay
        self._origin = RetryOrigin.SDK
        self._wire_id = engine.fresh_id()
        self._content = with_id(self.facts.exact_message(), self._wire_id)
        if self.facts.id is not None:
            engine.observed.resent(self._session, self.facts.id, self._wire_id)

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
            failed = classification.outcome not in NOT_FAILURES
            engine.detector.finished(facts.digest, failed, now)
        engine.history.append(snapshot, replacing=self._previous)
        self._previous = None
        if listeners:
            notify_call(listeners, snapshot.get())

    def _take_snapshot(self, final: Classification | None, now: float) -> LazyRecord:
        """Freeze the record's values as they are now (the record is built when read)."""
        facts = self.facts
        snapshot = LazyRecord(
            (
                facts.method,
                facts.tool,
                facts.id,
                self.idempotency,
                tuple(self._attempts),
                final,
                final is not None,
                self._client,
                self._protocol_version,
                self._session,
                self._engine.scenario,
                facts.digest,
                self._started_at,
                max(0.0, now - self._start),
            )
        )
        self._snapshot = snapshot
        if self._ref is not None:
            self._ref.snapshot = snapshot
        return snapshot

    def _restore_id(self, message: JSON) -> bytes | None:
        caller_id = self.facts.id
        if (
            caller_id is None
            or self._wire_id is caller_id  # never re-sent: the common case
            or same_id(self._wire_id, caller_id)
            or not isinstance(message, dict)
            or not same_id(message.get("id"), self._wire_id)
        ):
            return None
        return with_id(self._exact(message), caller_id)

    def _exact(self, message: JSON) -> JSON:
        """The last JSON answer with exact integers, to be re-serialised."""
        source = self._message_source
        if source is None or is_exact(source):
            return message
        return loads(source)


def _declared(extensions: Mapping[str, Any]) -> Idempotency | None:
    """The idempotency one request declares for itself, if it does (and validly)."""
    value = extensions.get(IDEMPOTENCY_EXTENSION)
    if value is None:
        return None
    try:
        return Idempotency(value)
    except ValueError:
        return None
