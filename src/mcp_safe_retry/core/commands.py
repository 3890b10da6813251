"""What a call asks its shell to do next: small values the shell carries out, nothing more.

A shell feeds ``Call`` events (a response head, a body, a network error, a stream's end) and
gets back one of these. While a call is exchanging it answers with ``Send``, ``Sleep``,
``Read``, ``Lock``, ``Unlock``, ``Admit`` or ``Consult``; it ends an exchange with
``HandOn``, ``Stream``, ``Contain``, ``Reply``, ``Raise`` or ``Refuse`` (and, inside an SSE
answer being handed on, with ``EndStream``, ``Break``, ``Refuse`` or ``Raise``).

A shell dispatches on the command's type and knows nothing of why it was given: a new
capability is a new command (or a new ``AttemptKind`` of ``Send``) that the core returns and
each shell learns to carry out once, in ``shells/httpx_async.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from .attempt_kinds import AttemptKind
from .outcomes import Outcome
from .stream import StreamTracker

if TYPE_CHECKING:
    from .breaker import Breaker
    from .budget import Budget

__all__ = [
    "Admit",
    "Break",
    "Command",
    "Consult",
    "Contain",
    "EndStream",
    "HandOn",
    "HeaderEdits",
    "Lock",
    "Raise",
    "Read",
    "Refuse",
    "Reply",
    "Send",
    "Sleep",
    "Stream",
    "Unlock",
]

HeaderEdits = tuple[tuple[str, str | None], ...]
"""Request headers to change, by lower-case name: set to the value, or removed (None)."""

# NamedTuples, not attrs classes: one or more is made per call, and they are the cheapest
# frozen values Python builds.


class Send(NamedTuple):
    """Send the request now; ``content`` replaces the caller's body (None: send it as is,
    headers and all), with ``headers`` changed."""

    content: bytes | None
    kind: AttemptKind = AttemptKind.POST
    headers: HeaderEdits = ()


class Sleep(NamedTuple):
    """Wait this many seconds, then tell the call (``Call.slept``) for what comes next."""

    seconds: float


class Read(NamedTuple):
    """Read the whole body (at most ``limit`` bytes), then hand it in (``Call.received``)."""

    limit: int


class HandOn(NamedTuple):
    """Hand the response on; ``body`` replaces the one read (None: the body as read)."""

    body: bytes | None = None


class Stream(NamedTuple):
    """Hand the SSE answer on, each chunk fed to ``tracker`` (its output is what is handed on),
    and tell the call when it ends (``Call.stream_ended``)."""

    tracker: StreamTracker


class Contain(NamedTuple):
    """Answer with this JSON-RPC error body (HTTP 200, JSON) instead of raising."""

    body: bytes


class Reply(NamedTuple):
    """Answer with a response made here from an answer the server sent earlier (kept by
    the call, its body read whole): its status, Content-Type and body."""

    status: int
    content_type: str | None
    body: bytes


class Lock(NamedTuple):
    """Take the transport's session lock (waiting while another call holds it), then tell
    the call (``Call.locked``). Only one call at a time re-initialises a lost session."""


class Unlock(NamedTuple):
    """Release the session lock, then carry out ``then``."""

    then: Command


class Raise(NamedTuple):
    """Raise this exception (the call's record is attached to it already)."""

    error: BaseException


class EndStream(NamedTuple):
    """End the SSE answer being handed on, after handing on ``last`` (may be empty)."""

    last: bytes = b""


class Break(NamedTuple):
    """End the SSE answer with the HTTP library's protocol error carrying ``message`` (the
    shell builds it, attaches the record with ``Call.annotate``, and raises it)."""

    message: str


class Admit(NamedTuple):
    """Ask ``breaker`` whether a request to ``key`` may be sent now (a sync shell calls
    ``allow``, an async shell awaits ``allow_async``), then tell the call
    (``Call.admitted``)."""

    breaker: Breaker
    key: str


class Consult(NamedTuple):
    """Ask ``budget`` for one retry (a sync shell calls ``allow_retry``, an async shell
    awaits ``allow_retry_async``), then tell the call (``Call.consulted``)."""

    budget: Budget


class Refuse(NamedTuple):
    """End the call, nothing sent, with the HTTP library's exception for ``outcome``
    (``CircuitOpenError`` for the breaker's hold, ``DuplicateCallError`` for the duplicate
    guard's) carrying ``message``: the shell builds it (``refusal``), attaches the record
    with ``Call.annotated``, and raises it."""

    message: str
    outcome: Outcome = Outcome.CIRCUIT_OPEN


Command = (
    Send
    | Sleep
    | Read
    | Lock
    | Unlock
    | HandOn
    | Stream
    | Contain
    | Reply
    | Raise
    | EndStream
    | Break
    | Admit
    | Consult
    | Refuse
)

HAND_ON = HandOn()
END_STREAM = EndStream()
LOCK = Lock()
