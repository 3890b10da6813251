"""One call's state machine, sans I/O: fed events, it answers with the command to carry out.

A shell starts a call (``start``) and carries out the command it gets back, feeding the call
what happened (``headed``, ``received``, ``failed``, ``slept``, ``stream_ended``, and the
gate's answer to an ``Ask``: ``answered``) until a command hands the
answer on or ends it. Every decision lives here: whether to retry, how long to wait, whether
an answer is read whole or streamed, when a failure is contained, what ends a broken SSE
answer, when a request is held back. Nothing here touches a socket, sleeps or imports an
HTTP library.

Where the call stands is explicit (``state.CallState``, checked on every event against
``state.ALLOWED``). What it is as it opens, and its parts, are set up by its base
(``opening.Opened``). It holds its parts rather than being them: its books (``ledger.Books``),
its session renewal (``renewing.Renewing``), a retry waiting for a shared budget
(``pending.PendingRetry``), what it hands on instead of the answer as it came (``answers``);
the request on the wire, which these parts share, has one owner (``outgoing.Outgoing``); it
reads its transport through a ``CallContext``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .adoption import Copies
from .attempt_kinds import AttemptKind, ErrorKind
from .breaker import circuit_open
from .classify import classify_answer
from .commands import (
    Command,
    Send,
    Sleep,
)
from .decision import Decision, Reason
from .events import Head, streams
from .guard import sends, unsent
from .headers import UTF8_CHARSETS, media_type
from .hedge_copies import Copy
from .idempotency import Idempotency
from .jsonrpc import (
    parse_request,
)
from .ledger import RecordRef
from .opening import Opened
from .outcomes import Classification, Outcome, verdict
from .pending import AfterFailure, AfterRead, AfterStream, PendingRetry, Settle, Then
from .records import RetryOrigin, target
from .renewing import Renewing
from .settling import ABANDONED, ASK_BUDGET, THROTTLED
from .state import (
    AWAITING,
    CallProtocolError,
    CallState,
    Event,
    allowed,
    awaiting,
    expect,
    out_of_order,
)
from .stream import StreamTracker
from .tally import asked_wait

if TYPE_CHECKING:
    from .context import CallContext

__all__ = ["Call", "begin"]


_RESUME = Send(None, AttemptKind.RESUME)
_new = tuple.__new__  # a named tuple from its values in order, without a keyword call
_HELD = AttemptKind.HELD
_READ = Idempotency.READ
_HELD_BACK = Decision.stop(Reason.CIRCUIT_OPEN)
# The states each event may come in (``state.ALLOWED``), checked by each handler on the way
# in; on the way out it sets the state its command leads to (``state.AWAITING``).
_START, _HEADED, _RECEIVED = allowed(Event.START), allowed(Event.HEADED), allowed(Event.RECEIVED)
_FAILED, _STREAM_ENDED = allowed(Event.FAILED), allowed(Event.STREAM_ENDED)
_SLEPT, _ANSWERED, _LOCKED = allowed(Event.SLEPT), allowed(Event.ANSWERED), allowed(Event.LOCKED)


class Call(Opened):
    """The state of one logical call across its attempts (built by ``begin``; what it is
    when it opens, and its parts, are set up by ``opening.Opened``)."""

    # What most calls never change, as class-level defaults: fewer stores per call.
    _reading: Head | None = None  # the head of the answer being read whole
    _state = CallState.NEW  # what the call awaits (core/state.py)

    # Parts few calls need, built when first needed: fewer objects per call.

    @functools.cached_property
    def renewing(self) -> Renewing:
        """The part that renews a session the server expired (a 404 for it)."""
        return Renewing(
            self._context,
            self.facts,
            books=self.books,
            outgoing=self.outgoing,
            settling=self.settling,
            ending=self.ending,
        )

    @functools.cached_property
    def copies(self) -> Copies:
        """A hedged call's copies (core/hedging.py races them)."""
        return Copies(self.facts, books=self.books, outgoing=self.outgoing, settling=self.settling)

    # -- the books (core/ledger.py), as the shells read them ----------------------------------

    @property
    def ref(self) -> RecordRef:
        """Where the newest snapshot of this call's record is kept: its books
        (``Books.ref``)."""
        return self.books

    def annotated(self, exc: BaseException) -> BaseException:
        """``exc`` with the call's record attached (``get_record(exc)``)."""
        return self.books.annotated(exc)

    # -- events in, commands out -----------------------------------------------------------

    def start(self) -> Command:
        """The first command: send the request (or, for a resumption, the client's GET)."""
        if self._state not in _START:
            raise out_of_order(Event.START, self._state)
        duplicate = self.duplicate
        if self.outgoing.resuming:
            command: Command = _RESUME
        elif duplicate is not None and not sends(duplicate):  # core/guard.py
            command = self._refuse(*unsent(duplicate, target(self.books.current), self.books))
        else:
            command = self._send_or_admit()
        self._state = AWAITING[command.__class__] or awaiting(command)
        return command

    def locked(self) -> Command:
        """The transport's session lock is held (``Renewing.locked``)."""
        if self._state not in _LOCKED:
            raise out_of_order(Event.LOCKED, self._state)
        command = self.renewing.locked()
        self._state = AWAITING[command.__class__] or awaiting(command)
        return command

    def slept(self) -> Command:
        """The backoff a ``Sleep`` asked for is over."""
        if self._state not in _SLEPT:
            raise out_of_order(Event.SLEPT, self._state)
        command = self._send_or_admit()
        self._state = AWAITING[command.__class__] or awaiting(command)
        return command

    def answered(self, allowed: bool) -> Command:
        """The gate's answer to an ``Ask``: for a retry that waits for the budget, its
        attempt is settled with it; before a send (the breaker's), send or end unsent."""
        if self._state not in _ANSWERED:
            raise out_of_order(Event.ANSWERED, self._state)
        if self.settling.planned:
            command = self._decide_pending(None if allowed else THROTTLED)
        else:
            command = self._admitted(allowed)
        self._state = AWAITING[command.__class__] or awaiting(command)
        return command

    def _admitted(self, allowed: bool) -> Command:
        """The breaker's answer: send, or end the call unsent (a read that follows an
        answer from the same server is sent all the same: ``breaker.FOLLOW_UP_WINDOW``)."""
        if allowed:
            return self.settling.send()
        admit, context = expect(self.admit, "breaker asked"), self._context
        if self.idempotency is _READ and context.answers.follows(admit.key, context.clock()):
            return self.settling.send()
        self.settling.give_back()  # a retry held back: its budget token goes back
        breaker = expect(admit.breaker, "breaker asked")
        retry_in = getattr(breaker, "retry_in", None)
        return self._refuse(
            _HELD_BACK, circuit_open(admit.key, retry_in(admit.key) if retry_in else None)
        )

    def _refuse(self, stop: Decision, classification: Classification) -> Command:
        """End the call unsent (held by the breaker or the duplicate guard): a HELD attempt,
        then the contained error, or the HTTP library's exception for the outcome."""
        self.outgoing.sent_at = now = self._context.clock()
        self.settling.record(
            stop,
            classification,
            head=None,
            error_kind=classification.error_kind,
            retry_after=None,
            message=None,
            now=now,
            kind=_HELD,
        )
        return self.ending.refused(classification)

    def headed(self, head: Head) -> Command:
        """A response head arrived: stream an SSE answer on, or read the body whole (a
        renewal's step is read whole, SSE or not)."""
        if self._state not in _HEADED:
            raise out_of_order(Event.HEADED, self._state)
        outgoing = self.outgoing
        if outgoing.renewal is None and streams(head, self.facts):
            outgoing.head = head
            command: Command = self.ending.stream()
        else:
            self._reading = head
            command = self._context.read_whole
        self._state = AWAITING[command.__class__] or awaiting(command)
        return command

    def received(self, body: bytes) -> Command:
        """The whole body of the answer a ``Read`` asked for (a renewal's step: its own)."""
        if self._state not in _RECEIVED:
            raise out_of_order(Event.RECEIVED, self._state)
        head = self._reading
        if head is None:  # (``expect``, without its frame: read on every JSON answer)
            raise CallProtocolError("out of order: no head read (a Read follows headed())")
        if self.outgoing.renewal is not None:
            command = self.renewing.answered(head, body)
        else:
            facts = self.facts
            resuming = self.outgoing.resuming
            # Read without the huge-integer scan; answers.exact() re-reads if it is re-sent.
            classification, message = classify_answer(
                head.status,
                body,
                content_type=head.content_type,
                expected_id=None if facts.id is None else self.outgoing.wire_id,
                method=facts.method,
                max_event_bytes=self._context.max_event_bytes,
                want_message=self.ending.wants_message(),
                tasks=facts.declares_tasks,
            )
            if head.status == 404 and self.renewing.renewable(classification):
                command = self.renewing.lost(head, body, classification)
            else:
                source = None
                if message is not None and media_type(head.content_type)[1] in UTF8_CHARSETS:
                    source = body
                # Both built from their values in field order (no named tuple's __new__).
                retry_after = None  # asked_wait reads a Retry-After header, when one came
                if head.retry_after is not None:
                    retry_after = asked_wait(head, self._context.wall_clock)
                settle = _new(Settle, (classification, head, None, retry_after, message, False))
                command = self._settle(
                    settle, _new(AfterRead, (head, body, message, source, resuming))
                )
        self._state = AWAITING[command.__class__] or awaiting(command)
        return command

    def failed(self, error: BaseException, kind: ErrorKind, detail: str) -> Command:
        """A network error instead of a response (or while its body was read)."""
        if self._state not in _FAILED:
            raise out_of_order(Event.FAILED, self._state)
        resuming = self.outgoing.resuming
        classification = verdict(Outcome.NETWORK_ERROR, error_kind=kind, detail=detail[:200])
        if self.outgoing.renewal is not None:
            command = self.renewing.over(classification, None, error_kind=kind)
        else:
            settle = Settle(classification, None, error_kind=kind)
            command = self._settle(settle, AfterFailure(error, kind, resuming))
        self._state = AWAITING[command.__class__] or awaiting(command)
        return command

    def stream_ended(
        self,
        tracker: StreamTracker,
        error: BaseException | None = None,
        kind: ErrorKind | None = None,
        detail: str = "",
    ) -> Command:
        """The SSE answer ``tracker`` followed ended, cleanly or broken by ``error``.

        Returns:
            ``Answer`` (its end, with a contained failure to hand on last, if any), ``Raise``, or,
            to re-issue a READ call whose stream broke, ``Sleep``/``Send``: the shell then
            runs the exchange again and splices the new answer into the stream.
        """
        if self._state not in _STREAM_ENDED:
            raise out_of_order(Event.STREAM_ENDED, self._state)
        if self.settling.done:
            command = self.ending.after_stream(AfterStream(tracker, error, None), None)
        else:
            settle, then = self.ending.stream_attempt(
                tracker, self.outgoing.head, error, kind, detail
            )
            command = self._settle(settle, then)
        self._state = AWAITING[command.__class__] or awaiting(command)
        return command

    def stream_closed(self, tracker: StreamTracker) -> None:
        """The caller closed the SSE answer; if its response had arrived, that is success
        (SDKs close a stream once they have the response), else the call was abandoned."""
        self._state = CallState.ENDED
        if self.settling.done:
            return
        classification = tracker.classification
        if classification is not None:
            settle = self.ending.stream_found(tracker, self.outgoing.head, classification)
            # No retry now (the caller has gone): no budget asked. Nothing follows: the
            # answer was found, so the stream ends as it came (``Ending.after_stream``).
            self.settling.decide_now(settle, ABANDONED)
        else:
            self.abandoned(None)

    def abandoned(self, exc: BaseException | None) -> None:
        """The call ended without a verdict: the caller closed the stream early, or an
        exception (a cancellation, an error of the inner transport's own) ended it."""
        self._state = CallState.ENDED
        if self.settling.done:
            return
        if self.settling.planned:  # awaiting the budget: settle the attempt as abandoned
            self._decide_pending(ABANDONED)
            return
        self.settling.abandoned(exc, self.outgoing.head)

    def reopen(self, last_event_id: str) -> None:
        """The client resumes this call's broken stream (a GET with Last-Event-ID)."""
        self._state = CallState.NEW
        self.settling.done = False
        self.outgoing.reopened(last_event_id, self._context.clock())
        self.books.reopened()

    @property
    def done(self) -> bool:
        """Whether the call has its verdict (a resumption opens it again)."""
        return self.settling.done

    def adopt(self, copy: Copy, origin: RetryOrigin) -> None:
        """What follows settles through ``copy`` of the race (core/hedging.py): its head,
        body or failure are fed to this call as those of its newest POST."""
        self._state = CallState.SENT
        self.outgoing.head = None
        self.copies.adopt(copy, origin)

    def _send_or_admit(self) -> Command:
        """Send now, or first ask the breaker (itself when it is this process's own)."""
        admit = self.admit
        if admit is None:
            return self.settling.send()
        if self._context.breaker_inline:
            return self._admitted(admit.allow())
        return admit

    def _retry(self, decision: Decision) -> Command:
        """The command that carries out a retry: wait first, unless there is nothing to wait."""
        if decision.delay > 0:
            return Sleep(decision.delay)
        return self._send_or_admit()

    def _ask_budget(self, pending: PendingRetry) -> Command:
        """Keep the retry planned until the shell has asked the budget (``answered``)."""
        self.settling.plan(pending)
        return expect(self._context.ask_budget, "shared budget to ask")

    def _decide_pending(self, stop: Decision | None) -> Command:
        """Settle the attempt that waited for the budget, now that it answered: ``stop``
        ends the call instead of the retry, None lets the retry go; then carry on."""
        pending, decision = self.settling.answer(stop)
        return self._settle(pending.settle, pending.then, decision)

    def _settle(self, settle: Settle, then: Then, decision: Decision | None = None) -> Command:
        """Settle the attempt that ended as ``settle`` says (``decision``: settled already,
        once the budget answered), or first ask the shared budget; then what follows: its
        retry, or how the answer ends (``Ending``, by what the attempt left: ``then``)."""
        if decision is None:
            decision = self.settling.decide(settle)
            if decision is ASK_BUDGET:
                return self._ask_budget(PendingRetry(settle, then))
        if decision.retry:
            if isinstance(then, AfterStream):  # from inside the SSE answer handed on
                self.outgoing.reissued = True
            return self._retry(decision)
        if isinstance(then, AfterRead):
            return self.ending.after_read(then)
        if isinstance(then, AfterFailure):
            return self.ending.after_failure(then)
        if then.resume_from is not None:  # kept for the client's GET with Last-Event-ID
            self._context.await_resumption(then.resume_from, self)
        return self.ending.after_stream(then, decision)


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
