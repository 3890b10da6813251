"""The call's state machine, driven without I/O: events in, commands out."""

from __future__ import annotations

import json

import pytest

from mcp_safe_retry import CONTAINED_ERROR_CODE, Idempotency, Outcome, Reason, RetryPolicy
from mcp_safe_retry.core.call import Call, Head
from mcp_safe_retry.core.commands import (
    Break,
    Contain,
    EndStream,
    HandOn,
    Raise,
    Read,
    Send,
    Sleep,
    Stream,
)
from mcp_safe_retry.core.engine import Engine
from mcp_safe_retry.core.kinds import AttemptKind, ErrorKind
from mcp_safe_retry.core.sse import encode_event

POLICY = RetryPolicy(tools={"lookup": Idempotency.READ}, jitter="none")
JSON = Head(200, "application/json")
SSE = Head(200, "text/event-stream")


def engine(**options: object) -> Engine:
    return Engine(policy=POLICY, rand=lambda: 0.5, clock=lambda: 0.0, **options)  # type: ignore[arg-type]


def begin(e: Engine, tool: str = "lookup", request_id: int = 7) -> Call:
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool}}
    call = e.begin(json.dumps(body).encode(), {"content-type": "application/json"}, {})
    assert call is not None
    return call


def answer(request_id: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"content": []}}).encode()


def test_a_503_then_a_200_is_sleep_send_read_hand_on() -> None:
    e = engine()
    call = begin(e)
    assert call.start() == Send(None, AttemptKind.POST)  # the caller's body, as it is
    assert call.headed(Head(503)) == Read(e.max_event_bytes)
    assert call.received(b"") == Sleep(0.2)
    retry = call.slept()
    assert isinstance(retry, Send) and retry.content is not None
    wire_id = json.loads(retry.content)["id"]
    assert wire_id != 7  # a fresh id: the spec forbids re-using one
    assert call.headed(JSON) == Read(e.max_event_bytes)
    handed = call.received(answer(wire_id))
    assert isinstance(handed, HandOn) and handed.body is not None
    assert json.loads(handed.body)["id"] == 7  # the caller's id restored
    record = call.ref.current
    assert [a.status for a in record.attempts] == [503, 200]
    assert record.outcome == Outcome.TOOL_SUCCESS
    assert e.history.last() == record


def test_an_unsafe_call_meeting_a_network_error_raises_it_annotated() -> None:
    call = begin(engine(), tool="charge")
    call.start()
    error = ConnectionError("reset")
    command = call.failed(error, ErrorKind.READ, "reset")
    assert command == Raise(error)
    assert any("1 attempt(s) [read]" in note for note in error.__notes__)
    assert call.ref.current.attempts[-1].decision.reason is Reason.NOT_IDEMPOTENT  # type: ignore[union-attr]


def test_a_contained_failure_is_a_contain_command() -> None:
    call = begin(engine(contain_failures=True), tool="charge")
    call.start()
    command = call.failed(ConnectionError("reset"), ErrorKind.READ, "reset")
    assert isinstance(command, Contain)
    assert json.loads(command.body)["error"]["code"] == CONTAINED_ERROR_CODE


@pytest.mark.parametrize("contain", [False, True])
def test_a_broken_stream_of_a_read_call_is_reissued_and_spliced(contain: bool) -> None:
    e = engine(contain_failures=contain)
    call = begin(e)
    call.start()
    stream = call.headed(SSE)
    assert isinstance(stream, Stream)
    stream.tracker.feed(b": keep-alive\n\n")
    error = ConnectionResetError("cut")
    retry = call.stream_ended(stream.tracker, error, ErrorKind.READ, "cut")
    assert retry == Sleep(0.2)
    resend = call.slept()
    assert isinstance(resend, Send) and resend.content is not None
    wire_id = json.loads(resend.content)["id"]
    assert call.headed(JSON) == Read(e.max_event_bytes)
    end = call.received(answer(wire_id))
    assert isinstance(end, EndStream)
    assert end.last.startswith(b"event: message\ndata: ")
    data = json.loads(end.last.split(b"data: ", 1)[1])
    assert data == json.loads(answer(7))  # one response, for the caller's id


def test_a_reissue_answered_without_a_response_breaks_the_stream() -> None:
    call = begin(engine())
    call.start()
    stream = call.headed(SSE)
    assert isinstance(stream, Stream)
    call.stream_ended(stream.tracker, ConnectionResetError("cut"), ErrorKind.READ, "cut")
    call.slept()
    call.headed(Head(404))
    assert call.received(b"") == Break(
        "SSE stream broke; its re-issued request got no response (HTTP 404)"
    )


def test_a_finished_stream_ends_without_a_command_to_send() -> None:
    call = begin(engine())
    call.start()
    stream = call.headed(SSE)
    assert isinstance(stream, Stream)
    assert stream.tracker.feed(encode_event(answer(7)))
    assert call.stream_ended(stream.tracker) == EndStream()
    assert call.ref.current.outcome == Outcome.TOOL_SUCCESS


def test_hooks_hear_nothing_until_the_shell_publishes() -> None:
    heard: list[str] = []

    class Ear:
        def on_attempt(self, record: object, attempt: object) -> None:
            heard.append("attempt")

        def on_call(self, record: object) -> None:
            heard.append("call")

    call = begin(engine(hooks=[Ear()]))
    call.start()
    call.headed(Head(503))
    call.received(b"")
    assert heard == []  # the decision told no one
    call.publish()
    assert heard == ["attempt"]
    resend = call.slept()
    assert isinstance(resend, Send) and resend.content is not None
    call.headed(JSON)
    call.received(answer(json.loads(resend.content)["id"]))
    call.publish()
    assert heard == ["attempt", "attempt", "call"]
