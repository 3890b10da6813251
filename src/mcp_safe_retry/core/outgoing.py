"""What a call's next or newest send carries, kept in one place for the parts that share it.

The call (``call.Call``), its session renewal (``renewing.Renewing``) and its records all read
or change the same few facts about the request on the wire: the id it went out under, when,
in which session, with which body and header changes, who sent it and as what kind of
attempt. ``Outgoing`` owns them; each part holds the one ``Outgoing`` of its call.
"""

from __future__ import annotations

from .attempt_kinds import AttemptKind
from .commands import HeaderEdits
from .events import Head
from .jsonrpc import RequestId
from .records import RetryOrigin
from .session import Renewal

__all__ = ["Outgoing"]


class Outgoing:
    """The request as it goes (or went) out: one per call, changed as the call moves on."""

    # What most calls never change, as class-level defaults: fewer stores per call (one is
    # built per call, so no __slots__, which would forbid the defaults).
    edits: HeaderEdits = ()  # header changes every later send carries
    kind = AttemptKind.POST  # what kind of attempt it is
    delay = 0.0  # the backoff waited before it
    in_flight = False  # sent, its attempt not recorded yet
    head: Head | None = None  # the head of its SSE answer, while that flows
    resuming = False  # the client's own GET resuming a broken stream
    resume_id: str | None = None  # the Last-Event-ID it went out with
    reissued = False  # re-issued from inside an SSE answer already handed on
    renewal: Renewal | None = None  # the session's renewal, while its steps go out

    def __init__(
        self,
        wire_id: RequestId | None,
        sent_at: float,
        session: str | None,
        origin: RetryOrigin,
        content: bytes | None,
    ) -> None:
        self.wire_id = wire_id  # the id the newest POST went out under
        self.sent_at = sent_at  # when it went out (the call's clock)
        self.session = session  # the Mcp-Session-Id it went out with
        self.origin = origin  # who sent it
        self.content = content  # the body to send instead of the caller's (None: as it came)

    def reopened(self, last_event_id: str, now: float) -> None:
        """The client's GET with ``last_event_id`` resumes the call's broken stream."""
        self.resume_id = last_event_id
        self.in_flight = True
        self.resuming = True
        self.reissued = False
        self.delay = 0.0
        self.sent_at = now
