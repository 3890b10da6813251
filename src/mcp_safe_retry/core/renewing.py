"""The part of a call that renews a session the server expired (2025 era), once.

A 404 to a request that carried ``Mcp-Session-Id`` means the server no longer knows the
session and did not process the request. The call keeps that 404, takes the transport's
session lock (``Lock``: one renewal at a time), and then either re-sends in the session
another call renewed meanwhile, or runs the renewal itself (the steps: ``session.Renewal``)
and re-sends in the new session under a fresh id, or hands the 404 on when no renewal comes
of it. ``Renewing`` is a part the call holds: it shares the request on the wire with the
call through their one ``outgoing.Outgoing``, records its attempts through the call's
``settling.Settling``, sends and ends a re-issued stream through its ``ending.Ending``; it holds
nothing that holds the call (a call leaves no reference cycle).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .commands import LOCK, Answer, Command, Unlock
from .decision import Decision, Reason
from .jsonrpc import RequestFacts
from .outcomes import Classification
from .session import SESSION_HEADER, Renewal
from .session_lost import session_lost
from .state import expect

if TYPE_CHECKING:
    from .context import CallContext
    from .ending import Ending
    from .events import Head
    from .ledger import Books
    from .outgoing import Outgoing
    from .settling import Settling

__all__ = ["Renewing"]

_SESSION_LOST = Decision(retry=True, reason=Reason.SESSION_LOST)
_REINITIALISED = Decision(retry=True, reason=Reason.SESSION_REINITIALISED)
_NOT_REINITIALISED = Decision.stop(Reason.REINITIALISE_FAILED)


class Renewing:
    """How one call renews its session: at most once, whatever its idempotency (the server
    did not process a request it answered with 404 for the session)."""

    __slots__ = (
        "_context",
        "_failures_seen",
        "_lost",
        "_renewed",
        "books",
        "ending",
        "facts",
        "outgoing",
        "settling",
    )

    def __init__(
        self,
        context: CallContext,
        facts: RequestFacts,
        *,
        books: Books,
        outgoing: Outgoing,
        settling: Settling,
        ending: Ending,
    ) -> None:
        self._context = context
        self.facts = facts
        self.books = books  # the call's books: the session of its record
        self.outgoing = outgoing
        self.settling = settling  # records the renewal's attempts
        self.ending = ending  # ends a stream whose request was re-issued
        # The 404, handed on if unrenewed.
        self._lost: tuple[Head, bytes, Classification] | None = None
        self._failures_seen = 0  # failed renewals of the session when the 404 came
        self._renewed = False  # re-sent in a renewed session: a second 404 is handed on

    def locked(self) -> Command:
        """The transport's session lock is held: re-send in the session another call
        renewed meanwhile, hand the 404 on if that renewal failed, or renew it here."""
        context = self._context
        sessions = context.sessions
        outgoing = self.outgoing
        expired = expect(outgoing.session, "expired session (see renewable())")
        handshake = expect(sessions.handshake(expired), "handshake to replay")
        new = sessions.replacement(expired)
        if new is not None:
            return Unlock(self._resend_in(new))
        if sessions.failures(expired) > self._failures_seen:
            self.settling.stop_planned(_NOT_REINITIALISED, context.clock())
            return Unlock(self._hand_on_lost())
        renewal = self.outgoing.renewal = Renewal(handshake, context.fresh_id())
        outgoing.wire_id = renewal.wire_id
        outgoing.sent_at = context.clock()
        outgoing.in_flight = True
        return renewal.initialize()

    def renewable(self, classification: Classification) -> bool:
        """Whether a 404 says the session the request carried is lost, and this call may
        renew it: once (a 404 in the renewed session is handed on), never for the client's
        own initialize or resuming GET, never for a session the client ended itself (its
        own DELETE), and only with the initialize that opened the session to replay."""
        session = self.outgoing.session
        sessions = self._context.sessions
        return (
            session is not None
            and not self._renewed
            and not self.outgoing.resuming
            and self.facts.method != "initialize"
            and not sessions.ended(session)
            and sessions.handshake(session) is not None
            and session_lost(classification, sent_session=True)
        )

    def lost(self, head: Head, body: bytes, classification: Classification) -> Command:
        """The server did not process the request: keep its 404 (handed on if no renewal
        comes of it), and take the session lock to renew."""
        context = self._context
        self._lost = (head, body, classification)
        self._failures_seen = context.sessions.failures(expect(self.outgoing.session, "session"))
        self.settling.record(
            _SESSION_LOST,
            classification,
            head=head,
            error_kind=None,
            retry_after=None,
            message=None,
            now=context.clock(),
        )
        return LOCK

    def answered(self, head: Head, body: bytes) -> Command:
        """A renewal step's answer, read whole: the next step, or the renewal's end."""
        renewal = expect(self.outgoing.renewal, "renewal running")
        classification, step = renewal.answered(head, body, self._context.max_event_bytes)
        if step is not None:
            return step
        return self.over(classification, head)

    def over(
        self, classification: Classification, head: Head | None, error_kind: str | None = None
    ) -> Command:
        """The renewal ended (``classification``: its last step's answer): re-send in the
        new session, or hand the 404 on."""
        renewal = expect(self.outgoing.renewal, "renewal running")
        lost = expect(self._lost, "404 kept")
        expired = expect(self.outgoing.session, "expired session")
        context = self._context
        now = context.clock()
        opened = renewal.opened
        if opened is not None and renewal.session is not None and classification.ok:
            context.sessions.renewed(expired, renewal.session)
            # The attempt is the initialize's (its notification was accepted).
            self.settling.record(
                _REINITIALISED,
                opened[0],
                head=opened[1],
                error_kind=None,
                retry_after=None,
                message=None,
                now=now,
            )
            self.outgoing.renewal = None
            return Unlock(self._resend_in(renewal.session))
        context.sessions.failed(expired)
        self.settling.record(
            _NOT_REINITIALISED,
            classification,
            head=head,
            error_kind=error_kind,
            retry_after=None,
            message=None,
            now=now,
            final=lost[2],  # the caller gets the 404, as the server sent it
        )
        self.outgoing.renewal = None
        return Unlock(self._hand_on_lost())

    def _resend_in(self, session: str) -> Command:
        """Re-send the request (under the fresh id its retry prepared) in ``session``."""
        self._renewed = True
        self.books.session = self.outgoing.session = session
        self.outgoing.edits = ((SESSION_HEADER, session),)
        return self.settling.send()

    def _hand_on_lost(self) -> Command:
        """The 404 that lost the session, as the server sent it: the call's answer."""
        head, body, _ = expect(self._lost, "404 kept")
        if self.outgoing.reissued:  # inside an SSE answer handed on already: it ends that
            return self.ending.reissued_end(head)
        return Answer(body, head.status, head.content_type)
