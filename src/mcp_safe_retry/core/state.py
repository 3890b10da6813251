"""Where one call stands, and which event it may be fed there (h11's ``_state.py`` is the
model): ``CallState`` is what the call awaits, set from the command it last returned
(``AWAITING``, ``awaiting``); ``ALLOWED`` is the table of the states each event may come in,
which the call's handler of each event checks on the way in (``allowed``); an event out
of order raises ``CallProtocolError`` (``out_of_order``: a fault of the code driving the
call, never of the network), and so does a value the call needs that its events did not
bring (``expect``).
"""

from __future__ import annotations

from enum import Enum
from typing import TypeVar, get_args

from .commands import (
    Ask,
    Command,
    Lock,
    Read,
    Send,
    Sleep,
    Stream,
    Unlock,
)

__all__ = [
    "ALLOWED",
    "AWAITING",
    "CallProtocolError",
    "CallState",
    "Event",
    "allowed",
    "awaiting",
    "expect",
    "out_of_order",
]

T = TypeVar("T")


class CallProtocolError(RuntimeError):
    """A call was fed an event its state does not allow, or lacks what the event needs."""


class CallState(Enum):
    """What a call awaits: the answer to the command it returned last."""

    NEW = "new"  # built (or reopened for a resumption): start() comes next
    SENT = "sent"  # a Send: the head, or a network failure
    READING = "reading"  # a Read: the whole body, or a failure while reading it
    STREAMING = "streaming"  # a Stream: the SSE answer's end
    SLEEPING = "sleeping"  # a Sleep: the backoff's end
    ASKING = "asking"  # an Ask: the gate's answer (the breaker's, or the budget's)
    LOCKING = "locking"  # a Lock: the session lock
    ENDED = "ended"  # any other command: the answer is handed on, or the call ended


class Event(Enum):
    """What a shell (or the hedging driver) feeds a call."""

    START = "start"
    HEADED = "headed"
    RECEIVED = "received"
    FAILED = "failed"
    STREAM_ENDED = "stream_ended"
    SLEPT = "slept"
    ANSWERED = "answered"
    LOCKED = "locked"


_S = CallState
ALLOWED: dict[Event, frozenset[CallState]] = {
    Event.START: frozenset({_S.NEW}),
    Event.HEADED: frozenset({_S.SENT}),
    Event.RECEIVED: frozenset({_S.READING}),
    Event.FAILED: frozenset({_S.SENT, _S.READING}),
    Event.STREAM_ENDED: frozenset({_S.STREAMING}),
    Event.SLEPT: frozenset({_S.SLEEPING}),
    Event.ANSWERED: frozenset({_S.ASKING}),
    Event.LOCKED: frozenset({_S.LOCKING}),
}
"""The states each event may come in (``stream_closed``, ``abandoned``: in any)."""

_LEADS_TO: dict[type, CallState | None] = {
    Send: _S.SENT,
    Read: _S.READING,
    Stream: _S.STREAMING,
    Sleep: _S.SLEEPING,
    Ask: _S.ASKING,
    Lock: _S.LOCKING,
    Unlock: None,  # carries on: the state is that of the command it holds (``then``)
}
AWAITING: dict[type, CallState | None] = {
    kind: _LEADS_TO.get(kind, _S.ENDED) for kind in get_args(Command)
}
"""Every command's type -> the state it leads to (any but those above ends the call), so a
handler sets the state on the way out with one subscript: ``AWAITING[command.__class__] or
awaiting(command)`` (None, for an ``Unlock``, asks ``awaiting``)."""


def awaiting(command: Command) -> CallState:
    """The state a call is in once it returned ``command`` (an ``Unlock`` carries on)."""
    if type(command) is Unlock:
        command = command.then
    state = AWAITING[command.__class__]
    return _S.ENDED if state is None else state  # an Unlock of an Unlock: none is made


def expect(value: T | None, what: str) -> T:
    """``value``, which the events so far must have brought (``what`` names it)."""
    if value is None:
        raise CallProtocolError(f"out of order: no {what}")
    return value


def allowed(kind: Event) -> tuple[CallState, ...]:
    """The states event ``kind`` may come in (``ALLOWED``), as the call's handler of it
    checks them on the way in: a tuple, compared by identity (a frozenset of enum members
    hashes each one in Python)."""
    return tuple(ALLOWED[kind])


def out_of_order(kind: Event, state: CallState) -> CallProtocolError:
    """The error for event ``kind`` fed to a call in ``state``, which ``ALLOWED`` forbids."""
    return CallProtocolError(f"{kind.value} while {state.value}")
