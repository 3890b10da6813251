"""How a call's answer ends once its last attempt is settled with no retry, as a part the
call holds: handed on as it came or with the caller's id restored, contained as the JSON-RPC
error that stands for the failure, spliced into an SSE answer already handed on, or raised.

``Ending`` also weighs how an SSE answer ended (``stream_attempt``: the attempt to settle,
and whether the client may resume it with ``Last-Event-ID``), and keeps the last answer read
whole, which ends a stream whose request was re-issued (``reissued_end``), and follows an
SSE answer as it flows (``stream``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .answers import contained, restored, spliced, stale
from .attempt_kinds import ErrorKind
from .commands import HAND_ON, Answer, Break, Command, Raise, Refuse, Stream, contain, made_here
from .contain import server_error
from .decision import Decision, Reason
from .jsonrpc import JSON, RequestFacts, dumps
from .listings import LIST_METHODS
from .observed import LEARNED_METHODS
from .outcomes import Classification, Outcome, verdict
from .pending import AfterFailure, AfterRead, AfterStream, Settle
from .state import CallProtocolError
from .stream import StreamTracker

if TYPE_CHECKING:
    from .context import CallContext
    from .events import Head
    from .ledger import Books
    from .legacy import Deliver
    from .outgoing import Outgoing

__all__ = ["Ending"]

_KEPT = LEARNED_METHODS | LIST_METHODS  # the answers read whole to be learnt from or kept


class Ending:
    """How one call's answer ends (see the module docstring)."""

    # What most calls never change, as class-level defaults: fewer stores per call (one is
    # built per call, so no __slots__, which would forbid the defaults).
    message: JSON = None  # the last JSON answer read whole
    message_source: bytes | None = None  # its body, if read without exact integers
    # An HTTP+SSE POST (core/legacy.py): what puts an event on the stream its client reads
    # answers from; a contained failure goes there too, and HTTP errors are contained.
    answers_on: Deliver | None = None
    special = False  # a list read or an HTTP+SSE POST: its end is looked at more closely

    def __init__(
        self,
        context: CallContext,
        facts: RequestFacts,
        books: Books,
        outgoing: Outgoing,
    ) -> None:
        self._context = context
        self.facts = facts
        self.books = books
        self.outgoing = outgoing

    def wants_message(self) -> bool:
        """Whether an answer must be read whole: to learn from it, to keep it (a list
        read's last good answer; a guarded call's that its caller gave up on, which a
        re-send joins), or to restore the caller's id in it (a re-sent call).
        Otherwise a plain success may be recognised without building it."""
        return (
            self.facts.method in _KEPT
            or self.outgoing.wire_id is not self.facts.id
            or self.books.unseen
        )

    def stream(self) -> Stream:
        """Follow the SSE answer now arriving, and hand it on as it flows."""
        wire_id = self.outgoing.wire_id
        if wire_id is None:
            raise CallProtocolError("a notification's answer is never streamed")
        facts = self.facts
        tracker = StreamTracker(
            wire_id=wire_id,
            caller_id=facts.id if facts.id is not None else wire_id,
            method=facts.method,
            max_event_bytes=self._context.max_event_bytes,
            want_message=self.wants_message(),
            tasks=facts.declares_tasks,
        )
        if self.books.watched_in is not None:  # guarded: its caller may give up mid-stream
            self.books.stream = tracker
        return Stream(tracker)

    def contained(self, *, in_stream: bool = False) -> bytes | None:
        """The JSON-RPC error that stands for this call's failure, if contained
        (``answers.contained``)."""
        context = self._context
        return contained(
            self.facts,
            self.books.ref.current,
            failures=context.contain_failures,
            http_errors=context.contain_http_errors or self.answers_on is not None,
            in_stream=in_stream,
        )

    def refused(self, classification: Classification) -> Command:
        """A call ended unsent: the contained error, or the HTTP library's exception."""
        reissued = self.outgoing.reissued
        if self.books.stale is not None:  # a list read: its last good answer instead
            return self._stale(in_stream=reissued)
        joined = self.books.joined
        if isinstance(joined, dict):  # a re-send that joined the same call's unseen answer
            return made_here(dumps({**joined, "id": self.facts.id}), self.answers_on)
        contained = self.contained(in_stream=reissued)
        if contained is None:
            outcome = classification.outcome
            return Refuse(classification.detail or str(outcome), outcome)
        return contain(contained, None if reissued else self.answers_on)

    def _stale(self, *, in_stream: bool) -> Answer:
        """A list read's last good answer, in place of the failure it met."""
        body = stale(self.books.stale, self.facts.id, in_stream=in_stream)
        if in_stream:
            return Answer(body)
        return made_here(body, self.answers_on)  # an HTTP+SSE POST's client reads its stream

    def after_read(self, then: AfterRead) -> Command:
        """What follows an answer read whole, its attempt settled with no retry."""
        head, body, message, source, resuming = then
        facts = self.facts
        self.message = message
        self.message_source = source
        if resuming:
            return HAND_ON  # the client's own GET: its answer goes back as it came
        if self.special and self.books.stale is not None:  # a list read: its last good answer
            return self._stale(in_stream=self.outgoing.reissued)
        if self.outgoing.reissued:
            return self.reissued_end(head)
        # The httpx flavour (mcp 1.x dies of one), and an HTTP+SSE POST (both SDKs' POST
        # writers stop at one, and its answer is read from the event stream).
        if self._context.contain_http_errors or (self.special and self.answers_on is not None):
            contained = self.contained()
            if contained is not None:  # the server's own error, if its body holds one
                if facts.id is None:
                    raise CallProtocolError("only a request's failure is contained")
                error = server_error(body, head.content_type, facts.id) or contained
                return contain(error, self.answers_on)
        replacement = restored(message, source, self.outgoing.wire_id, facts.id)
        return HAND_ON if replacement is None else Answer(replacement)

    def after_failure(self, then: AfterFailure) -> Command:
        """What follows a network failure, its attempt settled with no retry."""
        error, kind, resuming = then
        self.books.annotate(error)
        # A body that would not decode is no transport failure: it is raised as it is, as
        # is a failed resumption (the client's own GET).
        if resuming or kind is ErrorKind.DECODING:
            return Raise(error)
        reissued = self.outgoing.reissued
        if self.books.stale is not None:  # a list read: its last good answer instead
            return self._stale(in_stream=reissued)
        contained = self.contained(in_stream=reissued)
        if contained is None:
            return Raise(error)
        return contain(contained, None if reissued else self.answers_on)

    def after_stream(self, then: AfterStream, decision: Decision | None) -> Command:
        """How an SSE answer ends, its attempt settled with ``decision`` and no retry (None:
        the call had ended before)."""
        tracker, error, _ = then
        if tracker.done:
            return HAND_ON
        if decision is not None and decision.reason is Reason.RESUMABLE:
            # The client resumes it (GET with Last-Event-ID): it ends as on the wire.
            return HAND_ON if error is None else Raise(self.books.annotated(error))
        if self.books.stale is not None:  # a list read: its last good answer instead
            return self._stale(in_stream=True)
        contained = self.contained(in_stream=True)
        if contained is not None:
            return contain(contained)
        if error is not None:
            return Raise(self.books.annotated(error))
        return HAND_ON

    def stream_attempt(
        self,
        tracker: StreamTracker,
        head: Head | None,
        error: BaseException | None,
        kind: ErrorKind | None,
        detail: str,
    ) -> tuple[Settle, AfterStream]:
        """How to settle the attempt whose SSE answer (``head``) ended (``error``,
        ``detail``: what broke it, if anything did), and what to keep for after."""
        classification = tracker.classification
        if classification is not None:
            return self.stream_found(tracker, head, classification, kind), AfterStream(
                tracker, error, None
            )
        # A server that numbered its events lets the client resume with Last-Event-ID;
        # re-issuing on top of that would run the request twice.
        resume_from = tracker.last_event_id or self.outgoing.resume_id
        settle = Settle(
            verdict(
                Outcome.STREAM_INCOMPLETE,
                detail="stream ended before the response" if error is None else detail[:200],
                error_kind=kind,
            ),
            head,
            error_kind=kind,
            resumable=resume_from is not None,
        )
        return settle, AfterStream(tracker, error, resume_from)

    @staticmethod
    def stream_found(
        tracker: StreamTracker,
        head: Head | None,
        classification: Classification,
        kind: ErrorKind | None = None,
    ) -> Settle:
        """How to settle the attempt whose SSE answer (``head``) held the response
        ``tracker`` found (``classification``), however the stream ended after it (``kind``:
        what broke it, if anything did)."""
        return Settle(classification, head, error_kind=kind, message=tracker.message)

    def reissued_end(self, head: Head) -> Command:
        """How the SSE answer already handed on ends, its re-issued request answered by
        ``head`` (and the last answer read): with that answer, or a contained failure."""
        caller_id = self.facts.id
        event = spliced(self.message, self.message_source, caller_id) or self.contained(
            in_stream=True
        )
        if event is None:
            return Break(
                f"SSE stream broke; its re-issued request got no response (HTTP {head.status})"
            )
        return Answer(event)
