"""Where one call stands, and which event it may be fed there (h11's ``_state.py`` is the
model): ``CallState`` is what the call awaits, set from the command it last returned
(``awaiting``); ``ALLOWED`` is the table of the states each event may come in; an event out
of order raises ``CallProtocolError`` (a fault of the code driving the call, never of the
network), and so does a value the call needs that its events did not bring (``expect``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from enum import Enum
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from .commands import (
    Admit,
    Command,
    Consult,
    Lock,
    Read,
    Send,
    Sleep,
    Stream,
    Unlock,
)

__all__ = [
    "ALLOWED",
    "CallProtocolError",
    "CallState",
    "Event",
    "awaiting",
    "event",
    "expect",
]

T = TypeVar("T")
P = ParamSpec("P")


class CallProtocolError(RuntimeError):
    """A call was fed an event its state does not allow, or lacks what the event needs."""


class CallState(Enum):
    """What a call awaits: the answer to the command it returned last."""

    NEW = "new"  # built (or reopened for a resumption): start() comes next
    SENT = "sent"  # a Send: the head, or a network failure
    READING = "reading"  # a Read: the whole body, or a failure while reading it
    STREAMING = "streaming"  # a Stream: the SSE answer's end
    SLEEPING = "sleeping"  # a Sleep: the backoff's end
    ADMITTING = "admitting"  # an Admit: the breaker's answer
    CONSULTING = "consulting"  # a Consult: the budget's answer
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
    ADMITTED = "admitted"
    CONSULTED = "consulted"
    LOCKED = "locked"


_S = CallState
ALLOWED: dict[Event, frozenset[CallState]] = {
    Event.START: frozenset({_S.NEW}),
    Event.HEADED: frozenset({_S.SENT}),
    Event.RECEIVED: frozenset({_S.READING}),
    Event.FAILED: frozenset({_S.SENT, _S.READING}),
    Event.STREAM_ENDED: frozenset({_S.STREAMING}),
    Event.SLEPT: frozenset({_S.SLEEPING}),
    Event.ADMITTED: frozenset({_S.ADMITTING}),
    Event.CONSULTED: frozenset({_S.CONSULTING}),
    Event.LOCKED: frozenset({_S.LOCKING}),
}
"""The states each event may come in (``stream_closed``, ``abandoned``: in any)."""

_AWAITING: dict[type, CallState] = {
    Send: _S.SENT,
    Read: _S.READING,
    Stream: _S.STREAMING,
    Sleep: _S.SLEEPING,
    Admit: _S.ADMITTING,
    Consult: _S.CONSULTING,
    Lock: _S.LOCKING,
}


def awaiting(command: Command) -> CallState:
    """The state a call is in once it returned ``command`` (an ``Unlock`` carries on)."""
    if type(command) is Unlock:
        command = command.then
    return _AWAITING.get(type(command), _S.ENDED)


def expect(value: T | None, what: str) -> T:
    """``value``, which the events so far must have brought (``what`` names it)."""
    if value is None:
        raise CallProtocolError(f"out of order: no {what}")
    return value


class _Stateful(Protocol):
    _state: CallState
    _busy: bool  # inside an event: events it feeds itself are not checked again


S = TypeVar("S", bound=_Stateful)
_Method = Callable[Concatenate[S, P], Command]


def event(kind: Event) -> Callable[[_Method[S, P]], _Method[S, P]]:
    """Make a method the handler of event ``kind``: checked against ``ALLOWED`` on the way
    in, the state set from the command it returns on the way out."""
    allowed = ALLOWED[kind]

    def wrap(method: _Method[S, P]) -> _Method[S, P]:
        @functools.wraps(method)
        def handle(self: S, /, *args: P.args, **kwargs: P.kwargs) -> Command:
            if self._busy:  # an event the call feeds itself (an inline breaker's answer)
                return method(self, *args, **kwargs)
            if self._state not in allowed:
                raise CallProtocolError(f"{kind.value} while {self._state.value}")
            self._busy = True
            try:
                command = method(self, *args, **kwargs)
            finally:
                self._busy = False
            self._state = awaiting(command)
            return command

        return handle

    return wrap
