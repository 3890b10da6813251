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
from .jsonrpc import RequestId
from .outcomes import Outcome
from .stream import StreamTracker

if TYPE_CHECKING:
    from .breaker import Breaker
    from .budget import Budget

__all__ = [
    "CANCEL_EDITS",
    "CANCEL_TIME_LIMIT",
    "Admit",
    "Break",
    "Command",
    "Consult",
    "Contain",
    "EndStream",
    "HandOn",
    "HeaderEdits",
    "Launch",
    "Lock",
    "Loser",
    "Raise",
    "Read",
    "Refuse",
    "Reply",
    "Send",
    "Sleep",
    "Stream",
    "Turn",
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


# -- a hedged call's race (core/hedging.py answers these; shells/race_httpx_async.py) ------

CANCEL_TIME_LIMIT = 2.0
"""Seconds a loser's ``notifications/cancelled`` POST may take before it is given up."""


class Launch(NamedTuple):
    """Send copy ``number`` now: the caller's body (``content`` None) or ``content``."""

    number: int
    content: bytes | None


class Loser(NamedTuple):
    """A copy still in flight that lost: cancel its task, close its response, and, when
    ``notice`` is not None, POST it (``notifications/cancelled`` for the copy's own id,
    ``hedge.cancellation``) with the caller's headers changed as ``edits`` say, given up
    after ``time_limit`` seconds."""

    number: int
    wire_id: RequestId
    notice: bytes | None = None
    edits: HeaderEdits = ()
    time_limit: float = CANCEL_TIME_LIMIT


CANCEL_EDITS: HeaderEdits = (("mcp-method", None), ("mcp-name", None))
"""How a loser's cancellation differs from the caller's request headers: it is no call of a
method or a tool (its body's length is its own)."""


class Turn(NamedTuple):
    """What the shell does after a copy's event.

    ``cancel``: the losers to cancel now. ``then``: None to wait for the other copies
    (closing the reporting copy's response, if any); a ``Launch`` to start a copy; a
    ``Sleep`` to wait before ``Hedging.slept``; an ``Admit`` (``Consult``) to ask the breaker
    (the budget) before ``Hedging.admitted`` (``Hedging.consulted``); any other command
    settles the exchange with the reporting copy's response, as ``Call`` commands do for a
    call never hedged.
    """

    cancel: tuple[Loser, ...] = ()
    then: Launch | Command | None = None
