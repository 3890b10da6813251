"""The part of a call that renews a session the server expired (2025 era), once.

A 404 to a request that carried ``Mcp-Session-Id`` means the server no longer knows the
session and did not process the request. The call keeps that 404, takes the transport's
session lock (``Lock``: one renewal at a time), and then either re-sends in the session
another call renewed meanwhile, or runs the renewal itself (the steps: ``session.Renewal``)
and re-sends in the new session under a fresh id, or hands the 404 on when no renewal comes
of it. ``Renewing`` is still a base of ``call.Call`` (the books, ``ledger.Books``, are a part
the call holds; this is the next part to become one: it shares the call's wire id, send
time and in-flight state, which need one owner first).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .commands import LOCK, Command, HeaderEdits, Reply, Send, Unlock
from .decision import Decision, Reason
from .jsonrpc import RequestFacts, RequestId
from .outcomes import Classification
from .session import SESSION_HEADER, Renewal
from .session_lost import session_lost
from .state import CallState, Event, event, expect

if TYPE_CHECKING:
    from .context import CallContext
    from .events import Head
    from .ledger import Books

__all__ = ["Renewing"]

_SESSION_LOST = Decision(retry=True, reason=Reason.SESSION_LOST)
_REINITIALISED = Decision(retry=True, reason=Reason.SESSION_REINITIALISED)
_NOT_REINITIALISED = Decision.stop(Reason.REINITIALISE_FAILED)


class Renewing:
    """How one call renews its session: at most once, whatever its idempotency (the server
    did not process a request it answered with 404 for the session)."""

    # Set by Call.__init__ (or its class).
    _state: CallState
    _busy: bool
    _context: CallContext
    facts: RequestFacts
    books: Books  # the call's books: the session of its record
    _sent_session: str | None  # the Mcp-Session-Id the call's request goes out with
    _wire_id: RequestId | None
    _sent_at: float
    _in_flight: bool
    _resuming: bool
    _reissued: bool
    # The call's own steps, which this part uses (methods of Call).
    _record: Callable[..., Decision]
    _send: Callable[[], Send]
    _stop_planned: Callable[[Decision, float], None]
    _reissued_end: Callable[[Head], Command]
    # What most calls never change, as class-level defaults: fewer stores per call.
    _renewal: Renewal | None = None  # the renewal this call runs, while it runs
    _lost: tuple[Head, bytes, Classification] | None = None  # the 404, handed on if unrenewed
    _failures_seen = 0  # failed renewals of the session when the 404 came
    _renewed = False  # re-sent in a renewed session: a second 404 is handed on
    _edits: HeaderEdits = ()  # header changes every later send carries (the new session)

    @event(Event.LOCKED)
    def locked(self) -> Command:
        """The transport's session lock is held: re-send in the session another call
        renewed meanwhile, hand the 404 on if that renewal failed, or renew it here."""
        context = self._context
        sessions = context.sessions
        expired = expect(self._sent_session, "expired session (see _renewable())")
        handshake = expect(sessions.handshake(expired), "handshake to replay")
        new = sessions.replacement(expired)
        if new is not None:
            return Unlock(self._resend_in(new))
        if sessions.failures(expired) > self._failures_seen:
            self._stop_planned(_NOT_REINITIALISED, context.clock())
            return Unlock(self._hand_on_lost())
        renewal = self._renewal = Renewal(handshake, context.fresh_id())
        self._wire_id = renewal.wire_id
        self._sent_at = context.clock()
        self._in_flight = True
        return renewal.initialize()

    def _renewable(self, classification: Classification) -> bool:
        """Whether a 404 says the session the request carried is lost, and this call may
        renew it: once (a 404 in the renewed session is handed on), never for the client's
        own initialize or resuming GET, never for a session the client ended itself (its
        own DELETE), and only with the initialize that opened the session to replay."""
        session = self._sent_session
        sessions = self._context.sessions
        return (
            session is not None
            and not self._renewed
            and not self._resuming
            and self.facts.method != "initialize"
            and not sessions.ended(session)
            and sessions.handshake(session) is not None
            and session_lost(classification, sent_session=True)
        )

    def _session_lost(self, head: Head, body: bytes, classification: Classification) -> Command:
        """The server did not process the request: keep its 404 (handed on if no renewal
        comes of it), and take the session lock to renew."""
        context = self._context
        self._lost = (head, body, classification)
        self._failures_seen = context.sessions.failures(expect(self._sent_session, "session"))
        self._record(
            _SESSION_LOST,
            classification,
            head=head,
            error_kind=None,
            retry_after=None,
            message=None,
            now=context.clock(),
        )
        return LOCK

    def _renewal_answered(self, head: Head, body: bytes) -> Command:
        """A renewal step's answer, read whole: the next step, or the renewal's end."""
        renewal = expect(self._renewal, "renewal running")
        classification, step = renewal.answered(head, body, self._context.max_event_bytes)
        if step is not None:
            return step
        return self._renewal_over(classification, head)

    def _renewal_over(
        self, classification: Classification, head: Head | None, error_kind: str | None = None
    ) -> Command:
        """The renewal ended (``classification``: its last step's answer): re-send in the
        new session, or hand the 404 on."""
        renewal = expect(self._renewal, "renewal running")
        lost = expect(self._lost, "404 kept")
        expired = expect(self._sent_session, "expired session")
        context = self._context
        now = context.clock()
        opened = renewal.opened
        if opened is not None and renewal.session is not None and classification.ok:
            context.sessions.renewed(expired, renewal.session)
            # The attempt is the initialize's (its notification was accepted).
            self._record(
                _REINITIALISED,
                opened[0],
                head=opened[1],
                error_kind=None,
                retry_after=None,
                message=None,
                now=now,
            )
            self._renewal = None
            return Unlock(self._resend_in(renewal.session))
        context.sessions.failed(expired)
        self._record(
            _NOT_REINITIALISED,
            classification,
            head=head,
            error_kind=error_kind,
            retry_after=None,
            message=None,
            now=now,
            final=lost[2],  # the caller gets the 404, as the server sent it
        )
        self._renewal = None
        return Unlock(self._hand_on_lost())

    def _resend_in(self, session: str) -> Command:
        """Re-send the request (under the fresh id its retry prepared) in ``session``."""
        self._renewed = True
        self.books.session = self._sent_session = session
        self._edits = ((SESSION_HEADER, session),)
        return self._send()

    def _hand_on_lost(self) -> Command:
        """The 404 that lost the session, as the server sent it: the call's answer."""
        head, body, _ = expect(self._lost, "404 kept")
        if self._reissued:  # inside an SSE answer handed on already: it ends that
            return self._reissued_end(head)
        return Reply(head.status, head.content_type, body)
