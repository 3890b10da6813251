"""One call's state machine, sans I/O: fed events, it answers with the command to carry out.

A shell starts a call (``start``) and carries out the command it gets back, feeding the call
what happened (``headed``, ``received``, ``failed``, ``slept``, ``stream_ended``, and the
answers of the breaker and the budget: ``admitted``, ``consulted``) until a command hands the
answer on or ends it. Every decision lives here: whether to retry, how long to wait, whether
an answer is read whole or streamed, when a failure is contained, what ends a broken SSE
answer, when a request is held back. Nothing here touches a socket, sleeps or imports an
HTTP library.

Where the call stands is explicit (``state.CallState``, checked on every event against
``state.ALLOWED``). It holds its parts rather than being them: its books (``ledger.Books``),
a retry waiting for a shared budget (``pending.PendingRetry``), what it hands on instead of
the answer as it came (``answers``); it reads its transport through a ``CallContext``.
Session renewal (``renewing.Renewing``) is still a base class: the next part to hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .answers import contained, restored, spliced
from .attempt_kinds import AttemptKind, ErrorKind
from .breaker import circuit_open
from .classify import classify_answer
from .commands import (
    END_STREAM,
    HAND_ON,
    Admit,
    Break,
    Command,
    Contain,
    EndStream,
    HandOn,
    Raise,
    Refuse,
    Send,
    Sleep,
    Stream,
)
from .contain import (
    server_error,
)
from .decision import Decision, Reason, decide
from .duplicate import Verdict
from .events import Head, streams
from .extensions import IDEMPOTENCY_EXTENSION
from .guard import held
from .headers import UTF8_CHARSETS, media_type
from .hedge_rules import Copy, CopyKind, CopyState
from .idempotency import Idempotency
from .jsonrpc import (
    JSON,
    RequestFacts,
    RequestId,
    parse_request,
    with_id,
)
from .ledger import Books, Notice, RecordRef
from .observed import LEARNED_METHODS, GiveUp, client_info
from .origin import consented, marked_origin
from .outcomes import Classification, Outcome, verdict
from .pending import AfterFailure, AfterRead, AfterStream, PendingRetry, Settle
from .records import AttemptValues, RetryOrigin, target
from .renewing import Renewing
from .session import SESSION_HEADER
from .state import CallProtocolError, CallState, Event, event, expect
from .stream import StreamTracker
from .tally import asked_wait, counted, refund, told

if TYPE_CHECKING:
    from .context import CallContext

__all__ = ["Call", "begin"]


_SEND_AS_IS = Send(None)
_RESUME = Send(None, AttemptKind.RESUME)
_POSTED, _RESUMED, _RENEWING = AttemptKind.POST, AttemptKind.RESUME, AttemptKind.REINITIALISE
_HELD = AttemptKind.HELD
_THROTTLED = Decision.stop(Reason.THROTTLED)
_HELD_BACK = Decision.stop(Reason.CIRCUIT_OPEN)
_DUPLICATE = Decision.stop(Reason.DUPLICATE_HELD)
_ABANDONED = Decision.stop(Reason.ABANDONED)
_ASK_BUDGET = Decision(retry=True, reason=Reason.THROTTLED)
"""What ``_decide_attempt`` answers when a shared budget must be asked before a retry is decided:
the attempt is settled again (from its ``PendingRetry``) once the budget has answered."""


_HEDGED = AttemptKind.HEDGE
_WON, _FAILED = str(CopyState.WON), str(CopyState.FAILED)  # a hedged call's fates


class Call(Renewing):
    """The state of one logical call across its attempts (built by ``begin``)."""

    # What most calls never change, as class-level defaults: fewer stores per call.
    _delay = 0.0
    _content: bytes | None = None  # the body to send instead of the caller's
    _message: JSON = None  # the last JSON answer read whole
    _message_source: bytes | None = None  # its body, if read without exact integers
    _head: Head | None = None  # the head of the SSE answer now flowing
    _reading: Head | None = None  # the head of the answer being read whole
    _in_flight = False
    _resuming = False
    _reissued = False  # re-issued from inside an SSE answer already handed on
    _resume_id: str | None = None
    _admit: Admit | None = None  # with a breaker: the command that asks it before a send
    _planned: PendingRetry | None = None  # the attempt to settle once the budget answers
    _answered = False  # while replaying: the budget has answered...
    _stop: Decision | None = None  # ...and this stops the call instead of the retry (if any)
    _spent = False  # the budget gave a token for the retry planned, not sent yet
    # A hedged call (core/hedging.py): its attempts are its copies, numbered as sent, each
    # with a fate; hedges use up no retries.
    _hedged = False
    _copy_number = 0
    _hedges = 0
    _kind = _POSTED
    done = False  # the call has its verdict (a resumption opens it again)
    _state = CallState.NEW  # what the call awaits (core/state.py)
    # A caller's notifications/cancelled for a hedged call that races: what gives the race
    # up, for the shell to call before it sends the notification on.
    gives_up: GiveUp | None = None
    _busy = False

    def __init__(
        self,
        context: CallContext,
        facts: RequestFacts,
        headers: Mapping[str, str],
        extensions: Mapping[str, Any],
        url: object = None,
    ) -> None:
        self._context = context
        self.facts = facts
        breaker = context.breaker
        if breaker is not None and facts.id is not None:
            self._admit = Admit(breaker, context.server_key(str(url)))
        session = self._sent_session = headers.get(SESSION_HEADER)
        observed = context.observed
        self.idempotency = (
            Idempotency.UNSAFE
            if facts.id is None
            else _declared(extensions)
            or context.policy.idempotency(facts.method, facts.tool, observed.read_only_tools)
        )
        now = context.clock()
        self._sent_at = now
        self._wire_id: RequestId | None = facts.id
        if facts.method == "notifications/cancelled":
            self._content = observed.remap_cancellation(facts, session)
            self.gives_up = observed.race_cancelled(facts, session)
        origin = marked_origin(extensions)
        if origin is None:
            is_resend = facts.id is not None and context.detector.is_resend(facts.identity, now)
            origin = RetryOrigin.APPLICATION if is_resend else RetryOrigin.NONE
        guard = context.guard  # the duplicate guard (core/guard.py): UNSAFE tool calls only
        guarded = duplicate = None
        if guard.guards(facts, self.idempotency):
            guarded = context.server_key(str(url))
            duplicate = guard.look(guarded, facts.identity, consented(extensions), now)
            if duplicate is not None and origin is RetryOrigin.NONE:
                origin = RetryOrigin.APPLICATION  # it repeats a call sent before
        self._origin = origin
        self.books = Books(
            context,
            facts,
            self.idempotency,
            start=now,
            started_at=context.wall_clock(),
            client=client_info(facts) or observed.client,
            protocol_version=headers.get("mcp-protocol-version") or observed.protocol_version,
            session=session,
            guarded=guarded,
            duplicate=duplicate,
        )

    # -- the books (core/ledger.py), as the shells read them ----------------------------------

    @property
    def ref(self) -> RecordRef:
        """Where the newest snapshot of this call's record is kept."""
        return self.books.ref

    def annotated(self, exc: BaseException) -> BaseException:
        """``exc`` with the call's record attached (``get_record(exc)``)."""
        return self.books.annotated(exc)

    def owed(self) -> list[Notice]:
        """The notifications the hooks are owed since last asked (``Books.owed``)."""
        return self.books.owed()

    # -- events in, commands out -----------------------------------------------------------

    @event(Event.START)
    def start(self) -> Command:
        """The first command: send the request (or, for a resumption, the client's GET)."""
        if self._resuming:
            return _RESUME
        duplicate = self.books.duplicate
        if duplicate is not None and duplicate.verdict is Verdict.HELD:
            return self._refuse(_DUPLICATE, held(duplicate, target(self.books.ref.current)))
        return self._send_or_admit()

    @event(Event.SLEPT)
    def slept(self) -> Command:
        """The backoff a ``Sleep`` asked for is over."""
        return self._send_or_admit()

    @event(Event.ADMITTED)
    def admitted(self, allowed: bool) -> Command:
        """The breaker's answer to an ``Admit``: send, or end the call unsent."""
        if allowed:
            return self._send()
        self._give_back()  # a retry held back: its budget token goes back
        admit = expect(self._admit, "Admit asked")
        retry_in = getattr(admit.breaker, "retry_in", None)
        return self._refuse(
            _HELD_BACK, circuit_open(admit.key, retry_in(admit.key) if retry_in else None)
        )

    def _refuse(self, stop: Decision, classification: Classification) -> Command:
        """End the call unsent (held by the breaker or the duplicate guard): a HELD attempt,
        then the contained error, or the HTTP library's exception for the outcome."""
        self._sent_at = now = self._context.clock()
        self._record(
            stop,
            classification,
            head=None,
            error_kind=classification.error_kind,
            retry_after=None,
            message=None,
            now=now,
            kind=_HELD,
        )
        contained = self.contained(in_stream=self._reissued)
        if contained is None:
            outcome = classification.outcome
            return Refuse(classification.detail or str(outcome), outcome)
        return EndStream(contained) if self._reissued else Contain(contained)

    @event(Event.CONSULTED)
    def consulted(self, allowed: bool) -> Command:
        """The budget's answer to a ``Consult``: the attempt is settled with it."""
        return self._decide_pending(None if allowed else _THROTTLED)

    @event(Event.HEADED)
    def headed(self, head: Head) -> Command:
        """A response head arrived: stream an SSE answer on, or read the body whole."""
        if self._renewal is not None:  # a step of the session's renewal: read whole, SSE or not
            self._reading = head
            return self._context.read_whole
        if streams(head, self.facts):
            self._head = head
            wire_id = self._wire_id
            if wire_id is None:
                raise CallProtocolError("a notification's answer is never streamed")
            return Stream(
                StreamTracker(
                    wire_id=wire_id,
                    caller_id=self.facts.id if self.facts.id is not None else wire_id,
                    method=self.facts.method,
                    max_event_bytes=self._context.max_event_bytes,
                    want_message=self._wants_message(),
                )
            )
        self._reading = head
        return self._context.read_whole

    @event(Event.RECEIVED)
    def received(self, body: bytes) -> Command:
        """The whole body of the answer a ``Read`` asked for."""
        head = expect(self._reading, "head read (a Read follows headed())")
        if self._renewal is not None:
            return self._renewal_answered(head, body)
        facts = self.facts
        resuming = self._resuming
        # Read without the huge-integer scan; answers.exact() re-reads if it is re-sent.
        classification, message = classify_answer(
            head.status,
            body,
            content_type=head.content_type,
            expected_id=None if facts.id is None else self._wire_id,
            method=facts.method,
            max_event_bytes=self._context.max_event_bytes,
            want_message=self._wants_message(),
        )
        if head.status == 404 and self._renewable(classification):
            return self._session_lost(head, body, classification)
        source = None
        if message is not None and media_type(head.content_type)[1] in UTF8_CHARSETS:
            source = body
        settle = Settle(
            classification,
            head,
            retry_after=asked_wait(head, self._context.wall_clock),
            message=message,
        )
        then = AfterRead(head, body, message, source, resuming)
        decision = self._decide_attempt(settle)
        if decision is _ASK_BUDGET:
            return self._ask_budget(PendingRetry(settle, then))
        return self._after_read(then, decision)

    def _after_read(self, then: AfterRead, decision: Decision) -> Command:
        """What follows an answer read whole, once its attempt is settled with ``decision``."""
        head, body, message, source, resuming = then
        facts = self.facts
        if decision.retry:
            return self._retry(decision)
        self._message = message
        self._message_source = source
        if resuming:
            return HAND_ON  # the client's own GET: its answer goes back as it came
        if self._reissued:
            return self._reissued_end(head)
        if self._context.contain_http_errors:  # the httpx flavour: mcp 1.x dies of one
            contained = self.contained()
            if contained is not None:  # the server's own error, if its body holds one
                if facts.id is None:
                    raise CallProtocolError("only a request's failure is contained")
                return Contain(server_error(body, head.content_type, facts.id) or contained)
        replacement = restored(message, source, self._wire_id, facts.id)
        return HAND_ON if replacement is None else HandOn(replacement)

    @event(Event.FAILED)
    def failed(self, error: BaseException, kind: ErrorKind, detail: str) -> Command:
        """A network error instead of a response (or while its body was read)."""
        resuming = self._resuming
        classification = verdict(Outcome.NETWORK_ERROR, error_kind=kind, detail=detail[:200])
        if self._renewal is not None:
            return self._renewal_over(classification, None, error_kind=kind)
        settle = Settle(classification, None, error_kind=kind)
        then = AfterFailure(error, kind, resuming)
        decision = self._decide_attempt(settle)
        if decision is _ASK_BUDGET:
            return self._ask_budget(PendingRetry(settle, then))
        return self._after_failure(then, decision)

    def _after_failure(self, then: AfterFailure, decision: Decision) -> Command:
        """What follows a network failure, once its attempt is settled with ``decision``."""
        error, kind, resuming = then
        if decision.retry:
            return self._retry(decision)
        self.books.annotate(error)
        # A body that would not decode is no transport failure: it is raised as it is, as
        # is a failed resumption (the client's own GET).
        if resuming or kind is ErrorKind.DECODING:
            return Raise(error)
        contained = self.contained(in_stream=self._reissued)
        if contained is None:
            return Raise(error)
        return EndStream(contained) if self._reissued else Contain(contained)

    @event(Event.STREAM_ENDED)
    def stream_ended(
        self,
        tracker: StreamTracker,
        error: BaseException | None = None,
        kind: ErrorKind | None = None,
        detail: str = "",
    ) -> Command:
        """The SSE answer ``tracker`` followed ended, cleanly or broken by ``error``.

        Returns:
            ``EndStream`` (with a contained failure to hand on last, if any), ``Raise``, or,
            to re-issue a READ call whose stream broke, ``Sleep``/``Send``: the shell then
            runs the exchange again and splices the new answer into the stream.
        """
        if self.done:
            return self._after_stream(AfterStream(tracker, error, None), None)
        settle, then = self._stream_attempt(tracker, error, kind, detail)
        decision = self._decide_attempt(settle)
        if decision is _ASK_BUDGET:
            return self._ask_budget(PendingRetry(settle, then))
        return self._after_stream(then, decision)

    def _after_stream(self, then: AfterStream, decision: Decision | None) -> Command:
        """How an SSE answer ends, once its attempt is settled with ``decision`` (None: the
        call had ended before)."""
        tracker, error, resume_from = then
        resumable = False
        if decision is not None:
            if resume_from is not None:  # kept for the client's GET with Last-Event-ID
                self._context.await_resumption(resume_from, self)
            if decision.retry:
                self._reissued = True
                return self._retry(decision)
            resumable = decision.reason is Reason.RESUMABLE
        if tracker.done:
            return END_STREAM
        if resumable:  # the client resumes it (GET with Last-Event-ID): it ends as on the wire
            return END_STREAM if error is None else Raise(self.books.annotated(error))
        contained = self.contained(in_stream=True)
        if contained is not None:
            return EndStream(contained)
        if error is not None:
            return Raise(self.books.annotated(error))
        return END_STREAM

    def stream_closed(self, tracker: StreamTracker) -> None:
        """The caller closed the SSE answer; if its response had arrived, that is success
        (SDKs close a stream once they have the response), else the call was abandoned."""
        self._state = CallState.ENDED
        if self.done:
            return
        if tracker.classification is not None:
            self._answered, self._stop = True, _ABANDONED  # no retry now: no budget asked
            settle, then = self._stream_attempt(tracker, None, None, "")
            self._after_stream(then, self._decide_attempt(settle))
        else:
            self.abandoned(None)

    def abandoned(self, exc: BaseException | None) -> None:
        """The call ended without a verdict: the caller closed the stream early, or an
        exception (a cancellation, an error of the inner transport's own) ended it."""
        self._state = CallState.ENDED
        self._busy = True  # an attempt settled again here is not an event from outside
        try:
            self._abandon(exc)
        finally:
            self._busy = False

    def _abandon(self, exc: BaseException | None) -> None:
        if self.done:
            return
        if exc is None:
            detail = "closed by the caller before the response"
        else:
            detail = f"ended by {type(exc).__name__}: {exc}"[:200]
        if self._planned is not None:  # awaiting the budget: settle the attempt as abandoned
            self._decide_pending(_ABANDONED)
            return
        stop = _ABANDONED
        now = self._context.clock()
        held = not self.books.attempts and not self._in_flight  # awaiting the breaker: unsent
        if self._in_flight or held:
            if self._head is not None:  # an SSE answer was flowing
                ended = verdict(Outcome.STREAM_INCOMPLETE, detail=detail)
            else:
                kind = ErrorKind.INTERNAL if isinstance(exc, Exception) else ErrorKind.CANCELLED
                ended = verdict(Outcome.NETWORK_ERROR, detail=detail, error_kind=kind)
            self._record(
                stop,
                ended,
                head=self._head,
                error_kind=ended.error_kind,
                retry_after=None,
                message=None,
                now=now,
                kind=_HELD if held else None,
            )
            return
        # Between attempts (in the backoff, or waiting for the session lock).
        self._stop_planned(stop, now)

    def _stop_planned(self, stop: Decision, now: float) -> None:
        """The retry the last attempt planned is never sent: the call ends with it."""
        self._give_back()
        self.done = True
        self.books.amended(stop, now, self._wire_id)

    def reopen(self, last_event_id: str) -> None:
        """The client resumes this call's broken stream (a GET with Last-Event-ID)."""
        self._resume_id = last_event_id
        self._state = CallState.NEW
        self.done = False
        self._in_flight = True
        self._resuming = True
        self._reissued = False
        self._delay = 0.0
        self._sent_at = self._context.clock()
        self.books.reopened()

    def contained(self, *, in_stream: bool = False) -> bytes | None:
        """The JSON-RPC error that stands for this call's failure, if contained
        (``answers.contained``)."""
        context = self._context
        return contained(
            self.facts,
            self.books.ref.current,
            failures=context.contain_failures,
            http_errors=context.contain_http_errors,
            in_stream=in_stream,
        )

    # -- hedged reads: core/hedging.py races the copies and settles the call through these --

    @property
    def wire_id(self) -> RequestId | None:
        """The id the newest POST went out under."""
        return self._wire_id

    @property
    def admit(self) -> Admit | None:
        """What asks the breaker before a POST of this call (None: no breaker)."""
        return self._admit

    @property
    def origin(self) -> RetryOrigin:
        """Who sent the newest POST."""
        return self._origin

    def hedge_content(self, wire_id: RequestId) -> bytes:
        """The body of a hedge: the request under ``wire_id`` (the caller's own cancellation
        still names the first copy, sent under the caller's id: it is not remapped)."""
        self._hedges += 1
        return with_id(self.facts.exact_message(), wire_id)

    def adopt(self, copy: Copy, origin: RetryOrigin) -> None:
        """What follows settles through ``copy`` of the race: its head, body or failure are
        fed to this call as those of its newest POST."""
        self._hedged = True
        self._state = CallState.SENT
        self._copy_number = copy.number
        self._wire_id = copy.wire_id
        self._sent_at = copy.sent_at
        self._in_flight = True
        self._head = None
        self._origin = origin
        self._kind = _HEDGED if copy.kind is CopyKind.HEDGE else _POSTED

    def record_copy(
        self,
        copy: Copy,
        origin: RetryOrigin,
        classification: Classification,
        head: Head | None,
        error_kind: str | None,
    ) -> None:
        """Book the attempt of a copy that decided nothing (``Books.copy_ended``)."""
        self._in_flight = False  # none adopted: an abandoned call adds no attempt of its own
        self.books.copy_ended(
            copy, origin, classification, head, error_kind, sent_session=self._sent_session
        )

    def _send(self) -> Send:
        if self._spent:  # the retry's token is used
            self._spent = False
        self._sent_at = self._context.clock()
        self._in_flight = True
        self._head = None
        content = self._content
        return _SEND_AS_IS if content is None else Send(content, _POSTED, self._edits)

    def _send_or_admit(self) -> Command:
        """Send now, or first ask the breaker (itself when it is this process's own)."""
        admit = self._admit
        if admit is None:
            return self._send()
        if self._context.breaker_inline:
            return self.admitted(admit.breaker.allow(admit.key))
        return admit

    def _retry(self, decision: Decision) -> Command:
        """The command that carries out a retry: wait first, unless there is nothing to wait."""
        if decision.delay > 0:
            return Sleep(decision.delay)
        return self._send_or_admit()

    def _ask_budget(self, pending: PendingRetry) -> Command:
        """Keep the retry planned until the shell has asked the budget (``consulted``)."""
        self._planned = pending
        return expect(self._context.ask_budget, "shared budget to ask")

    def _decide_pending(self, stop: Decision | None) -> Command:
        """Settle the attempt that waited for the budget, now that it answered: ``stop``
        ends the call instead of the retry, None lets the retry go; then carry on."""
        pending, self._planned = expect(self._planned, "Consult asked"), None
        self._answered, self._stop = True, stop
        decision = self._decide_attempt(pending.settle)
        then = pending.then
        if isinstance(then, AfterRead):
            return self._after_read(then, decision)
        if isinstance(then, AfterFailure):
            return self._after_failure(then, decision)
        return self._after_stream(then, decision)

    def _give_back(self) -> None:
        """The retry the budget gave a token for is not sent: the token goes back."""
        if self._spent:
            self._spent = False
            refund(self._context)

    def _wants_message(self) -> bool:
        """Whether an answer must be read whole: to learn from it, or to restore the
        caller's id in it (a re-sent call). Otherwise a plain success may be recognised
        without building it."""
        return self.facts.method in LEARNED_METHODS or self._wire_id is not self.facts.id

    def _stream_attempt(
        self,
        tracker: StreamTracker,
        error: BaseException | None,
        kind: ErrorKind | None,
        detail: str,
    ) -> tuple[Settle, AfterStream]:
        """How to settle the attempt whose SSE answer ended (``error``, ``detail``: what
        broke it, if anything did), and what to keep for after."""
        classification = tracker.classification
        if classification is None:
            classification = verdict(
                Outcome.STREAM_INCOMPLETE,
                detail="stream ended before the response" if error is None else detail[:200],
                error_kind=kind,
            )
        # A server that numbered its events lets the client resume with Last-Event-ID;
        # re-issuing on top of that would run the request twice.
        resume_from = None
        if tracker.classification is None:
            resume_from = tracker.last_event_id or self._resume_id
        settle = Settle(
            classification,
            self._head,
            error_kind=kind,
            message=tracker.message,
            resumable=resume_from is not None,
        )
        return settle, AfterStream(tracker, error, resume_from)

    def _decide_attempt(self, settle: Settle) -> Decision:
        """Decide what follows the attempt that ended as ``settle`` says, and record it; or,
        when a budget of the shell's must be asked first, ``_ASK_BUDGET`` (nothing counted)."""
        classification, head, error_kind, retry_after, message, resumable = settle
        context = self._context
        now = context.clock()
        number = len(self.books.attempts) + 1 - self._hedges
        decision = decide(
            context.policy,
            idempotency=self.idempotency,
            classification=classification,
            attempt=number,
            elapsed=now - self.books.start,
            retry_after=retry_after,
            rand=context.rand,
        )
        if resumable or (decision.retry and self._resuming):
            # Resuming is the client's move (and a GET cannot be re-sent as the POST).
            decision = Decision.stop(Reason.RESUMABLE)
        if self.facts.id is not None:
            answered = self._answered
            if decision.retry and not answered and context.ask_budget is not None:
                return _ASK_BUDGET  # nothing counted yet: settled again once the shell asked
            failed = counted(context, classification)
            if answered:  # replayed with the budget's answer (last: a True spends a token)
                self._answered = False
                if decision.retry and self._stop is not None:
                    decision = self._stop
            elif decision.retry and not context.budget.allow_retry():
                decision = _THROTTLED
            # The breaker's ratio counts the call once, when no retry follows.
            told(self._admit, failed, retry_after, ends_call=not decision.retry)
            if decision.retry:
                self._spent = True
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
        final: Classification | None = None,
        kind: AttemptKind | None = None,
    ) -> Decision:
        """Append the attempt that just ended, with what follows it, for the hooks too
        (``final``: the call's verdict if it ends here, when not the attempt's own)."""
        context = self._context
        books = self.books
        self._in_flight = False
        resuming = self._resuming
        hedged = self._hedged
        renewal = self._renewal
        if final is None:
            final = classification
        attempt = AttemptValues(
            number=self._copy_number if hedged else len(books.attempts) + 1,
            retry_origin=RetryOrigin.APPLICATION if resuming else self._origin,
            wire_id=self._wire_id,
            classification=classification,
            status=head.status if head else None,
            content_type=head.content_type if head else None,
            error_kind=error_kind,
            delay=self._delay,
            retry_after=retry_after,
            decision=decision,
            elapsed=self._sent_at - books.start,
            duration=max(0.0, now - self._sent_at),
            kind=kind or (_RESUMED if resuming else self._kind if renewal is None else _RENEWING),
            session_id=self._sent_session if renewal is None else renewal.session,
            fate=(_FAILED if decision.retry else _WON) if hedged and renewal is None else None,
        )
        books.add(attempt, head, hedged=hedged)
        if hedged:
            self._copy_number = len(books.attempts) + 1  # an attempt after the race
        self._resuming = False
        if decision.retry:
            self._prepare_retry(decision)
        else:
            self.done = True
            context.observed.learn(self.facts, final, message, books.session)
        books.ended(final if self.done else None, now, self._wire_id)
        return decision

    def _prepare_retry(self, decision: Decision) -> None:
        context = self._context
        facts = self.facts
        self._delay = decision.delay
        self._kind = _POSTED
        self._origin = RetryOrigin.SDK
        if facts.id is None:  # a notification has no id to change: it goes as it came
            if self._content is None:
                self._content = facts.source
            return
        self._wire_id = context.fresh_id()
        self._content = with_id(facts.exact_message(), self._wire_id)
        context.observed.resent(self.books.session, facts.id, self._wire_id)

    def _reissued_end(self, head: Head) -> Command:
        """How the SSE answer already handed on ends, its re-issued request answered by
        ``head`` (and the last answer read): with that answer, or a contained failure."""
        caller_id = self.facts.id
        event = spliced(self._message, self._message_source, caller_id) or self.contained(
            in_stream=True
        )
        if event is None:
            return Break(
                f"SSE stream broke; its re-issued request got no response (HTTP {head.status})"
            )
        return EndStream(event)


def begin(
    context: CallContext,
    body: bytes,
    headers: Mapping[str, str],
    extensions: Mapping[str, Any],
    url: object = None,
) -> Call | None:
    """Start a call for a POSTed JSON-RPC message to ``url``; None when it is not one."""
    facts = parse_request(body)
    if facts is None:
        return None
    return Call(context, facts, headers, extensions, url)


def _declared(extensions: Mapping[str, Any]) -> Idempotency | None:
    """The idempotency one request declares for itself, if it does (and validly)."""
    value = extensions.get(IDEMPOTENCY_EXTENSION)
    if value is None:
        return None
    try:
        return Idempotency(value)
    except ValueError:
        return None
