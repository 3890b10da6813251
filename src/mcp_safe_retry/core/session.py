"""Sessions the server expired (2025 era), and their renewal with a replayed ``initialize``.

A server that ended a session answers 404 to every request carrying its ``Mcp-Session-Id``;
the client MUST then start a new session with a new ``initialize``. Such a 404 means the
server did not process the request, so re-sending it in the new session is safe whatever
the request is (an UNSAFE ``tools/call`` too). The official SDKs do not renew (every call
after an expiry fails), so the transport does it underneath them: it replays the client's
``initialize`` without a session id, sends ``notifications/initialized`` in the session it
opened, re-sends the request there under a fresh JSON-RPC id, and from then on rewrites the
expired id to the new one on every request the client sends (it still holds the old one).

``Sessions`` is the transport's memory of renewals; ``Renewal`` the steps one call takes to
renew, judged here and carried out by the shell. Pure: nothing here does I/O.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from .attempt_kinds import AttemptKind
from .classify import classify_answer, classify_event
from .commands import HeaderEdits, Send
from .headers import media_type
from .jsonrpc import JSON, RequestId, dumps, with_id
from .outcomes import Classification, Outcome, verdict
from .sse import SSEDecoder

if TYPE_CHECKING:
    from .events import Head

__all__ = ["SESSION_HEADER", "Handshake", "Renewal", "Sessions"]

SESSION_HEADER = "mcp-session-id"

# Headers the replayed handshake goes without: the expired session, and what the client
# sends only inside a session (the negotiated version; 2026-07-28's routing headers).
_OUTSIDE_A_SESSION: HeaderEdits = (
    (SESSION_HEADER, None),
    ("mcp-protocol-version", None),
    ("mcp-method", None),
    ("mcp-name", None),
)
_V = TypeVar("_V")
_NOTIFIED = "notifications/initialized"
_INITIALIZED = dumps({"jsonrpc": "2.0", "method": _NOTIFIED})


class Handshake(NamedTuple):
    """The client's ``initialize`` as it was answered: enough to open a session like it."""

    message: dict[str, JSON]  # the request as the client sent it
    version: str | None  # the protocolVersion the server answered with


class Sessions:
    """The sessions seen on this transport: the handshake that opened each, which expired
    ones were renewed as which, how often a renewal failed, and which ones the client ended
    itself. Bounded; safe across threads."""

    def __init__(self, limit: int = 256) -> None:
        self._lock = threading.Lock()
        self._limit = limit
        self._handshakes: OrderedDict[str, Handshake] = OrderedDict()
        self._newest: OrderedDict[str, str] = OrderedDict()  # expired -> the id in use now
        self._first: OrderedDict[str, str] = OrderedDict()  # renewed -> the first of its line
        self._failures: OrderedDict[str, int] = OrderedDict()
        self._ended: OrderedDict[str, None] = OrderedDict()  # ended by the client's DELETE

    def opened(self, session: str, handshake: Handshake) -> None:
        """The client's ``handshake`` opened ``session`` (the one a renewal replays)."""
        with self._lock:
            self._handshakes[session] = handshake
            _bound(self._handshakes, self._limit)

    def handshake(self, session: str) -> Handshake | None:
        """The handshake that opened ``session`` (or the first session of its line); None
        if it went past this transport."""
        return self._handshakes.get(self._first.get(session, session))

    def replacement(self, session: str) -> str | None:
        """The session that replaced ``session``, if it was renewed (the newest renewal)."""
        return self._newest.get(session)

    def first(self, session: str | None) -> str | None:
        """The session ``session`` renews (through every renewal), or itself: one key for
        what the client and the server call the same session."""
        if session is None:
            return None
        return self._first.get(session, session)

    def failures(self, session: str) -> int:
        """How many renewals of ``session`` failed."""
        return self._failures.get(session, 0)

    def renewed(self, expired: str, new: str) -> None:
        """``new`` replaces ``expired`` (and every session ``expired`` had replaced)."""
        with self._lock:
            for old, current in self._newest.items():
                if current == expired:
                    self._newest[old] = new
            self._newest[expired] = new
            self._first[new] = self._first.get(expired, expired)
            _bound(self._newest, self._limit)
            _bound(self._first, self._limit)

    def failed(self, expired: str) -> None:
        """A renewal of ``expired`` failed: the calls waiting for it hand their 404 on."""
        with self._lock:
            self._failures[expired] = self._failures.get(expired, 0) + 1
            _bound(self._failures, self._limit)

    def ending(self, session: str | None) -> None:
        """The client sends ``DELETE`` for ``session``: from now on a 404 for it is the end
        the client asked for, not an expiry, and is handed on (marked before the DELETE
        goes, so a request racing it is not renewed either)."""
        if session is None:
            return
        with self._lock:
            self._ended[session] = None
            self._ended.move_to_end(session)
            _bound(self._ended, self._limit)

    def end_answered(self, session: str | None, status: int) -> None:
        """The server answered the client's ``DELETE`` of ``session``: 405 says it does not
        let clients end sessions (the session lives on, and may still expire)."""
        if session is None or status != 405:
            return
        with self._lock:
            self._ended.pop(session, None)

    def ended(self, session: str) -> bool:
        """Whether the client ended ``session`` with its own ``DELETE``: never renewed."""
        return session in self._ended


def _bound(entries: OrderedDict[str, _V], limit: int) -> None:
    """Forget the oldest entries past ``limit``."""
    while len(entries) > limit:
        entries.popitem(last=False)


class Renewal:
    """One call's renewal of its session: the replayed ``initialize``, then
    ``notifications/initialized`` in the session it opened.

    Attributes:
        wire_id: the JSON-RPC id the ``initialize`` goes out under.
        session: the session the ``initialize`` opened (None until then).
        opened: the ``initialize``'s answer (its classification and head), once it
            opened a session.
    """

    def __init__(self, handshake: Handshake, wire_id: RequestId) -> None:
        self.wire_id = wire_id
        self._handshake = handshake
        self.session: str | None = None
        self.opened: tuple[Classification, Head] | None = None

    def initialize(self) -> Send:
        """The first step: the client's ``initialize`` under a fresh id, without a session."""
        content = with_id(self._handshake.message, self.wire_id)
        return Send(content, AttemptKind.REINITIALISE, _OUTSIDE_A_SESSION)

    def answered(
        self, head: Head, body: bytes, max_event_bytes: int
    ) -> tuple[Classification, Send | None]:
        """Judge a step's answer, its body read whole.

        Returns:
            The answer's classification and the next step to send; no next step ends the
            renewal, which succeeded if the classification is a success and ``opened`` is
            set.
        """
        status, content_type, session = head.status, head.content_type, head.session_id
        if self.opened is not None:  # the answer to notifications/initialized
            classification, _ = classify_answer(
                status, body, content_type=content_type, expected_id=None, method=_NOTIFIED
            )
            return classification, None
        classification, message = _read(status, content_type, body, self.wire_id, max_event_bytes)
        if classification.outcome is not Outcome.RPC_SUCCESS:
            return classification, None
        if not session:
            return verdict(Outcome.INVALID_ENVELOPE, detail="initialize opened no session"), None
        version, before = _protocol_version(message), self._handshake.version
        if before is not None and version != before:
            detail = f"the new session speaks {str(version)[:40]!r}, not {before!r}"
            return verdict(Outcome.INVALID_ENVELOPE, detail=detail), None
        self.session = session
        self.opened = (classification, head)
        edits: HeaderEdits = (
            (SESSION_HEADER, session),
            ("mcp-protocol-version", self._handshake.version),
            *_OUTSIDE_A_SESSION[2:],
        )
        return classification, Send(_INITIALIZED, AttemptKind.REINITIALISE, edits)


def _read(
    status: int, content_type: str | None, body: bytes, wire_id: RequestId, max_event_bytes: int
) -> tuple[Classification, JSON]:
    """The ``initialize`` answer's classification and message, from JSON or a whole SSE body
    (servers answer it either way)."""
    if 200 <= status < 300 and media_type(content_type)[0] == "text/event-stream":
        decoder = SSEDecoder(max_event_bytes)
        for event in decoder.feed(body) + decoder.finish():
            found = classify_event(event.data, event.event, wire_id, "initialize")
            if found is not None:
                return found
        detail = "no response to initialize in the stream"
        return verdict(Outcome.STREAM_INCOMPLETE, detail=detail), None
    return classify_answer(
        status,
        body,
        content_type=content_type,
        expected_id=wire_id,
        method="initialize",
        max_event_bytes=max_event_bytes,
    )


def _protocol_version(message: JSON) -> JSON:
    result = message.get("result") if isinstance(message, dict) else None
    return result.get("protocolVersion") if isinstance(result, dict) else None
