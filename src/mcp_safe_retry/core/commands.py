"""What a call asks its shell to do next: small values the shell carries out, nothing more.

A shell feeds ``Call`` events (a response head, a body, a network error, a stream's end) and
gets back one of these. While a call is exchanging it answers with ``Send``, ``Sleep``,
``Read``, ``Lock``, ``Unlock`` or ``Ask``; it ends an exchange with one way to answer,
``Answer`` (or ``Stream``, the SSE answer handed on as it flows), or one of the ways to fail,
``Raise``, ``Refuse`` or (inside an SSE answer being handed on) ``Break``.

A shell dispatches on the command's type and knows nothing of why it was given: a new
capability is a new command (or a new ``AttemptKind`` of ``Send``) that the core returns and
the shells learn to carry out once, in their one executor (``shells/bodies_httpx_async.py``),
which tells a gate (``gates.Gate``: the call, or a copy of its race) what each command met.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from .attempt_kinds import AttemptKind
from .jsonrpc import RequestId
from .outcomes import Outcome
from .sse import encode_event
from .stream import StreamTracker

if TYPE_CHECKING:
    from .breaker import Breaker
    from .budget import Budget
    from .legacy import Deliver

__all__ = [
    "CANCEL_EDITS",
    "CANCEL_TIME_LIMIT",
    "Answer",
    "Ask",
    "Break",
    "Command",
    "HeaderEdits",
    "Launch",
    "Lock",
    "Loser",
    "Next",
    "Raise",
    "Read",
    "Refuse",
    "Send",
    "Sleep",
    "Stream",
    "Unlock",
    "contain",
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


class Stream(NamedTuple):
    """Hand the SSE answer on, each chunk fed to ``tracker`` (its output is what is handed on),
    and tell the call when it ends (``Call.stream_ended``)."""

    tracker: StreamTracker


class Answer(NamedTuple):
    """Answer the caller: the one way a call ends well, short of a stream.

    ``status`` None: with the server's response, its body replaced by ``body`` (None: the
    body as read). Else with a response made here: ``status``, ``content_type`` and ``body``
    (a contained failure: ``contain``; or an answer the server sent earlier, kept by the
    call). Inside an SSE answer already handed on: end it, handing ``body`` on last (None:
    nothing more).
    """

    body: bytes | None = None
    status: int | None = None
    content_type: str | None = None
    # Also put this SSE event on that event stream (an HTTP+SSE POST's contained failure:
    # its client reads answers there, core/legacy.py); None: nothing more.
    stream: tuple[Deliver, bytes] | None = None


def contain(body: bytes, stream: Deliver | None = None) -> Answer:
    """Answer with this JSON-RPC error body (HTTP 200, JSON) instead of raising; with
    ``stream`` (an HTTP+SSE POST's event stream), put it there too, as one SSE event."""
    return made_here(body, stream)


def made_here(body: bytes, stream: Deliver | None = None) -> Answer:
    """Answer with this JSON-RPC body made here (HTTP 200, JSON: a contained failure, a list
    read's last good answer, a joined call's answer); with ``stream`` (an HTTP+SSE POST's
    event stream), put it there too, as one SSE event."""
    if stream is None:
        return Answer(body, 200, "application/json")
    return Answer(body, 200, "application/json", (stream, encode_event(body)))


class Lock(NamedTuple):
    """Take the transport's session lock (waiting while another call holds it), then tell
    the call (``Call.locked``). Only one call at a time re-initialises a lost session."""


class Unlock(NamedTuple):
    """Release the session lock, then carry out ``then``."""

    then: Command


class Raise(NamedTuple):
    """Raise this exception (the call's record is attached to it already)."""

    error: BaseException


class Break(NamedTuple):
    """End the SSE answer with the HTTP library's protocol error carrying ``message`` (the
    shell builds it, attaches the record with ``Call.annotate``, and raises it)."""

    message: str


class Ask(NamedTuple):
    """The one gate a POST passes: ask whether it may go, then tell the call the answer
    (``Call.answered``; a race: ``Hedging.answered``, or ``Hedging.hedge_answered`` for a
    hedge). A sync shell calls ``allow()``, an async shell awaits ``allow_async()``.

    What is asked is the core's business: ``breaker``, whether a request to ``key`` may be
    sent now (before any POST), or ``budget``, whether a retry may follow (before a retry or
    a hedge is decided); built by ``Ask(breaker, key)`` or ``Ask(budget=budget)``.
    """

    breaker: Breaker | None = None
    key: str = ""
    budget: Budget | None = None

    def allow(self) -> bool:
        """The gate's answer, asked at once (a sync shell, or one that answers inline)."""
        breaker, key, budget = self
        if breaker is not None:
            return breaker.allow(key)
        if budget is not None:
            return budget.allow_retry()
        raise ValueError("an Ask names a breaker or a budget")

    async def allow_async(self) -> bool:
        """The gate's answer, awaited (an async shell)."""
        breaker, key, budget = self
        if breaker is not None:
            return await breaker.allow_async(key)
        if budget is not None:
            return await budget.allow_retry_async()
        raise ValueError("an Ask names a breaker or a budget")


class Refuse(NamedTuple):
    """End the call, nothing sent, with the HTTP library's exception for ``outcome``
    (``CircuitOpenError`` for the breaker's hold, ``DuplicateCallError`` for the duplicate
    guard's) carrying ``message``: the shell builds it (``refusal``), attaches the record
    with ``Call.annotated``, and raises it."""

    message: str
    outcome: Outcome = Outcome.CIRCUIT_OPEN


Command = Send | Sleep | Read | Lock | Unlock | Answer | Stream | Raise | Break | Ask | Refuse

HAND_ON = Answer()  # the server's answer as read (an SSE answer handed on: its end as it came)
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


Next = Command | Launch | None
"""What a shell's executor carries out next: a call's command, or a race's (a copy to
``Launch``; None: wait for the other copies)."""
