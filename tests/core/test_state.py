"""The call's explicit state (core/state.py): each event is allowed only where the table
says, and an event out of order raises CallProtocolError (never an assert)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import cast

import pytest

from mcp_safe_retry import Idempotency, RetryPolicy
from mcp_safe_retry.core.attempt_kinds import ErrorKind
from mcp_safe_retry.core.budget import RetryBudget
from mcp_safe_retry.core.call import Call, begin
from mcp_safe_retry.core.commands import (
    HAND_ON,
    LOCK,
    Answer,
    Ask,
    Break,
    Command,
    Raise,
    Read,
    Refuse,
    Send,
    Sleep,
    Stream,
    Unlock,
)
from mcp_safe_retry.core.engine import Engine
from mcp_safe_retry.core.events import Head
from mcp_safe_retry.core.state import (
    ALLOWED,
    CallProtocolError,
    CallState,
    Event,
    awaiting,
)
from mcp_safe_retry.core.stream import StreamTracker

BODY = json.dumps(
    {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "lookup"}}
).encode()
OK = b'{"jsonrpc":"2.0","id":7,"result":{"content":[]}}'


def _call() -> Call:
    engine = Engine(
        policy=RetryPolicy(tools={"lookup": Idempotency.READ}, jitter="none"),
        clock=lambda: 0.0,
        wall_clock=time.time,
        rand=lambda: 0.5,
        id_prefix="0a1b2c3d",
    )
    call = begin(engine, BODY, {"content-type": "application/json"}, {})
    assert call is not None
    return call


def test_a_plain_exchange_walks_new_sent_reading_ended() -> None:
    call = _call()
    assert call._state is CallState.NEW
    assert isinstance(call.start(), Send)
    assert call._state is CallState.SENT
    assert isinstance(call.headed(Head(200, "application/json")), Read)
    assert call._state is CallState.READING
    assert call.received(OK) is HAND_ON
    assert call._state is CallState.ENDED


@pytest.mark.parametrize(
    "feed",
    [
        lambda c: c.received(OK),
        lambda c: c.headed(Head(200)),
        lambda c: c.slept(),
        lambda c: c.answered(True),
        lambda c: c.locked(),
    ],
)
def test_an_event_before_start_is_a_protocol_error(feed: Callable[[Call], object]) -> None:
    with pytest.raises(CallProtocolError):
        feed(_call())


def test_events_after_the_end_are_protocol_errors() -> None:
    call = _call()
    call.start()
    call.headed(Head(200, "application/json"))
    call.received(OK)
    with pytest.raises(CallProtocolError, match="received while ended"):
        call.received(OK)
    with pytest.raises(CallProtocolError):
        call.start()


def test_a_retry_waits_in_sleeping_and_only_slept_moves_it_on() -> None:
    call = _call()
    call.start()
    command = call.failed(OSError("x"), ErrorKind.CONNECT, "refused")
    assert isinstance(command, Sleep)
    assert call._state is CallState.SLEEPING
    with pytest.raises(CallProtocolError, match="headed while sleeping"):
        call.headed(Head(200))
    assert isinstance(call.slept(), Send)


def test_a_stream_is_ended_only_by_stream_ended() -> None:
    call = _call()
    call.start()
    assert isinstance(call.headed(Head(200, "text/event-stream")), Stream)
    assert call._state is CallState.STREAMING
    with pytest.raises(CallProtocolError):
        call.received(OK)


def test_the_table_names_every_event_and_the_end_allows_none() -> None:
    assert set(ALLOWED) == set(Event)
    assert all(CallState.ENDED not in states for states in ALLOWED.values())
    assert awaiting(HAND_ON) is CallState.ENDED


@pytest.mark.parametrize(
    ("command", "state"),
    [
        pytest.param(Send(None), CallState.SENT, id="send"),
        pytest.param(Read(10), CallState.READING, id="read"),
        pytest.param(Unlock(Read(10)), CallState.READING, id="unlock-then-read"),
        pytest.param(Unlock(Sleep(1.0)), CallState.SLEEPING, id="unlock-then-sleep"),
        pytest.param(Unlock(HAND_ON), CallState.ENDED, id="unlock-then-hand-on"),
        pytest.param(Unlock(Unlock(Read(10))), CallState.ENDED, id="unlock-of-unlock"),
        pytest.param(HAND_ON, CallState.ENDED, id="hand-on"),
        pytest.param(Sleep(1.0), CallState.SLEEPING, id="sleep"),
        pytest.param(
            Stream(StreamTracker(wire_id=7, caller_id=7, method="tools/call", max_event_bytes=1)),
            CallState.STREAMING,
            id="stream",
        ),
        pytest.param(Ask(budget=RetryBudget()), CallState.ASKING, id="ask"),
        pytest.param(LOCK, CallState.LOCKING, id="lock"),
        pytest.param(Answer(b"{}", 200), CallState.ENDED, id="answer"),
        pytest.param(Raise(OSError("x")), CallState.ENDED, id="raise"),
        pytest.param(Break("broken"), CallState.ENDED, id="break"),
        pytest.param(Refuse("held"), CallState.ENDED, id="refuse"),
    ],
)
def test_the_state_a_command_leads_to(command: Command, state: CallState) -> None:
    assert awaiting(command) is state


def test_an_event_the_handler_raises_in_leaves_the_state_as_it_was() -> None:
    call = _call()
    call.start()
    call.headed(Head(200, "application/json"))
    call._reading = None  # what a driver that skipped headed() would leave
    with pytest.raises(CallProtocolError, match="no head read"):
        call.received(OK)
    assert call._state is CallState.READING


# Each event as a driver feeds it to a call (the arguments it brings).
_FEEDS: list[tuple[Event, Callable[[Call], object]]] = [
    (Event.START, lambda c: c.start()),
    (Event.HEADED, lambda c: c.headed(Head(200, "application/json"))),
    (Event.RECEIVED, lambda c: c.received(OK)),
    (Event.FAILED, lambda c: c.failed(OSError("x"), ErrorKind.CONNECT, "refused")),
    (
        Event.STREAM_ENDED,
        lambda c: c.stream_ended(
            StreamTracker(wire_id=7, caller_id=7, method="tools/call", max_event_bytes=1 << 20)
        ),
    ),
    (Event.SLEPT, lambda c: c.slept()),
    (Event.ANSWERED, lambda c: c.answered(True)),
    (Event.LOCKED, lambda c: c.locked()),
]


def test_every_event_is_fed_here() -> None:
    assert [kind for kind, _ in _FEEDS] == list(Event)


@pytest.mark.parametrize("state", list(CallState))
@pytest.mark.parametrize(("kind", "feed"), _FEEDS, ids=[kind.value for kind, _ in _FEEDS])
def test_every_handler_consults_the_table(
    kind: Event, feed: Callable[[Call], object], state: CallState
) -> None:
    """Each event's handler lets it in only in the states ``ALLOWED`` names, and leaves the
    call in the state the command it returns leads to; refused, it changes nothing."""
    call = _call()
    call._reading = Head(200, "application/json")  # what a headed() before it leaves
    call._state = state
    if state in ALLOWED[kind] and kind is Event.LOCKED:  # let in, but no session expired
        with pytest.raises(CallProtocolError, match="no expired session"):
            feed(call)
    elif state in ALLOWED[kind]:
        command = feed(call)
        assert call._state is awaiting(cast(Command, command))
    else:
        with pytest.raises(CallProtocolError, match=f"^{kind.value} while {state.value}$"):
            feed(call)
        assert call._state is state
        assert call.books.attempts == [] and not call.outgoing.in_flight
