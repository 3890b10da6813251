"""The call's state machine, driven without I/O: events in, commands out."""

from __future__ import annotations

import json

import pytest

from mcp_safe_retry import (
    CONTAINED_ERROR_CODE,
    Action,
    CircuitBreaker,
    Decision,
    Idempotency,
    Outcome,
    Reason,
    RetryBudget,
    RetryPolicy,
)
from mcp_safe_retry.core.call import Call, Head
from mcp_safe_retry.core.commands import (
    Admit,
    Break,
    Consult,
    Contain,
    EndStream,
    HandOn,
    Lock,
    Raise,
    Read,
    Refuse,
    Reply,
    Send,
    Sleep,
    Stream,
    Unlock,
)
from mcp_safe_retry.core.engine import Engine
from mcp_safe_retry.core.kinds import AttemptKind, ErrorKind
from mcp_safe_retry.core.session import Handshake
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


# -- each sequence of a call, driven event by event: the commands it answers, exactly ------

URL = "http://127.0.0.1:1/mcp"
REQUEST = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "lookup"}}


class Clock:
    """The engine's clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def request(tool: str = "lookup", request_id: int = 7) -> bytes:
    return json.dumps({**REQUEST, "id": request_id, "params": {"name": tool}}).encode()


def sent_message(command: object) -> dict[str, object]:
    """The JSON-RPC message a ``Send`` carries (its content, not the caller's body)."""
    assert type(command) is Send and command.content is not None
    message = json.loads(command.content)
    assert isinstance(message, dict)
    return message


def test_a_success_is_send_read_hand_on_the_body_as_read() -> None:
    e = engine()
    call = begin(e)
    assert call.start() == Send(None, AttemptKind.POST, ())
    assert call.headed(JSON) == Read(e.max_event_bytes)
    assert call.received(answer(7)) == HandOn(None)  # never re-sent: the body as it came
    record = call.ref.current
    assert call.done
    assert [(a.number, a.status, a.decision) for a in record.attempts] == [
        (1, 200, Decision(Action.STOP, Reason.SUCCESS))
    ]
    assert record.outcome == Outcome.TOOL_SUCCESS
    assert record.post_count == 1


def test_a_retry_after_503_sleeps_the_backoff_and_resends_under_a_fresh_id() -> None:
    e = engine()
    call = begin(e)
    assert call.start() == Send(None, AttemptKind.POST, ())
    assert call.headed(Head(503, "text/plain")) == Read(e.max_event_bytes)
    assert call.received(b"busy") == Sleep(0.2)
    assert not call.done
    resend = call.slept()
    message = sent_message(resend)
    assert resend == Send(resend.content, AttemptKind.POST, ())
    assert message == {**REQUEST, "id": message["id"]}  # the same request...
    assert str(message["id"]).startswith("mcp-safe-retry-")  # ...under an id of its own
    assert call.wire_id == message["id"]
    assert call.headed(JSON) == Read(e.max_event_bytes)
    handed = call.received(answer(message["id"]))
    assert handed == HandOn(answer(7).replace(b" ", b""))  # the caller's id restored
    decisions = [a.decision for a in call.ref.current.attempts]
    assert decisions == [
        Decision(Action.RETRY, Reason.RETRYABLE_STATUS, 0.2),
        Decision(Action.STOP, Reason.SUCCESS),
    ]


def test_a_retry_honours_retry_after_in_its_sleep() -> None:
    e = engine()
    call = begin(e)
    call.start()
    call.headed(Head(503, "text/plain", retry_after="1"))
    assert call.received(b"") == Sleep(1.0)
    assert call.ref.current.attempts[0].decision == Decision(
        Action.RETRY, Reason.RETRYABLE_STATUS, 1.0
    )


def test_an_unsafe_call_answered_503_is_not_retried_the_503_is_handed_on() -> None:
    e = engine()
    call = begin(e, tool="charge")
    assert call.idempotency is Idempotency.UNSAFE
    assert call.start() == Send(None, AttemptKind.POST, ())
    assert call.headed(Head(503, "text/plain")) == Read(e.max_event_bytes)
    assert call.received(b"busy") == HandOn(None)
    assert call.done
    [attempt] = call.ref.current.attempts
    assert attempt.decision == Decision(Action.STOP, Reason.NOT_IDEMPOTENT)
    assert call.ref.current.outcome == Outcome.HTTP_ERROR


def test_a_contained_failure_answers_the_caller_s_id_with_the_contained_error() -> None:
    call = begin(engine(contain_failures=True), tool="charge")
    assert call.start() == Send(None, AttemptKind.POST, ())
    command = call.failed(ConnectionResetError("reset"), ErrorKind.READ, "reset")
    assert type(command) is Contain
    message = json.loads(command.body)
    assert message["id"] == 7 and message["jsonrpc"] == "2.0" and "result" not in message
    assert message["error"]["code"] == CONTAINED_ERROR_CODE
    assert message["error"]["message"] == (
        "mcp-safe-retry: NETWORK_ERROR after 1 attempt(s): reset"
    )
    assert message["error"]["data"]["outcome"] == "NETWORK_ERROR"
    assert [a["reason"] for a in message["error"]["data"]["attempts"]] == ["not_idempotent"]


def test_a_failure_of_a_read_call_is_retried_before_anything_is_contained() -> None:
    e = engine(contain_failures=True)
    call = begin(e)
    call.start()
    assert call.failed(ConnectionResetError("reset"), ErrorKind.CONNECT, "reset") == Sleep(0.2)
    resend = call.slept()
    wire_id = sent_message(resend)["id"]
    assert call.headed(JSON) == Read(e.max_event_bytes)
    assert call.received(answer(wire_id)) == HandOn(answer(7).replace(b" ", b""))


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


def opened_session(e: Engine, session: str = "s-1") -> None:
    """Tell the engine the session ``session`` was opened by INITIALIZE, as a shell does
    when the client's own initialize is answered."""
    e.sessions.opened(session, Handshake(INITIALIZE, "2025-11-25"))


def initialized(request_id: object, version: str = "2025-11-25") -> bytes:
    result = {"protocolVersion": version, "capabilities": {}, "serverInfo": {"name": "s"}}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


def test_a_lost_session_is_renewed_under_the_lock_then_the_call_is_resent_in_it() -> None:
    e = engine()
    opened_session(e)
    call = e.begin(request(), {"mcp-session-id": "s-1"}, {}, URL)
    assert call is not None
    assert call.start() == Send(None, AttemptKind.POST, ())
    assert call.headed(Head(404, "application/json")) == Read(e.max_event_bytes)
    assert call.received(b"") == Lock()
    # Under the lock: the client's initialize, replayed under a fresh id, outside a session.
    initialize = call.locked()
    replayed = sent_message(initialize)
    assert replayed == {**INITIALIZE, "id": replayed["id"]}
    assert replayed["id"] != 0
    assert type(initialize) is Send and initialize.kind is AttemptKind.REINITIALISE
    assert ("mcp-session-id", None) in initialize.headers
    assert call.headed(Head(200, "application/json", session_id="s-2")) == Read(
        e.max_event_bytes
    )
    notified = call.received(initialized(replayed["id"]))
    assert sent_message(notified) == {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert type(notified) is Send and notified.kind is AttemptKind.REINITIALISE
    assert ("mcp-session-id", "s-2") in notified.headers
    assert ("mcp-protocol-version", "2025-11-25") in notified.headers
    assert call.headed(Head(202)) == Read(e.max_event_bytes)
    unlock = call.received(b"")
    # The lock goes back, and the call goes again in the new session, under a fresh id.
    assert type(unlock) is Unlock
    resend = unlock.then
    message = sent_message(resend)
    assert message == {**REQUEST, "id": message["id"]} and message["id"] != replayed["id"]
    assert resend == Send(resend.content, AttemptKind.POST, (("mcp-session-id", "s-2"),))
    assert e.sessions.replacement("s-1") == "s-2"
    assert call.headed(JSON) == Read(e.max_event_bytes)
    assert call.received(answer(message["id"])) == HandOn(answer(7).replace(b" ", b""))
    record = call.ref.current
    assert [(a.kind, a.status, a.decision.reason) for a in record.attempts] == [  # type: ignore[union-attr]
        (AttemptKind.POST, 404, Reason.SESSION_LOST),
        (AttemptKind.REINITIALISE, 200, Reason.SESSION_REINITIALISED),
        (AttemptKind.POST, 200, Reason.SUCCESS),
    ]


def test_a_second_call_that_lost_the_session_resends_in_the_one_renewed_meanwhile() -> None:
    e = engine()
    opened_session(e)
    e.sessions.renewed("s-1", "s-2")  # another call renewed it while this one waited
    call = e.begin(request(), {"mcp-session-id": "s-1"}, {}, URL)
    assert call is not None
    call.start()
    call.headed(Head(404, "application/json"))
    assert call.received(b"") == Lock()
    unlock = call.locked()
    assert type(unlock) is Unlock
    assert unlock.then == Send(unlock.then.content, AttemptKind.POST, (("mcp-session-id", "s-2"),))  # type: ignore[union-attr]


def test_a_failed_renewal_unlocks_and_replies_with_the_404_as_the_server_sent_it() -> None:
    e = engine()
    opened_session(e)
    call = e.begin(request(), {"mcp-session-id": "s-1"}, {}, URL)
    assert call is not None
    call.start()
    call.headed(Head(404, "application/json"))
    assert call.received(b'{"lost": true}') == Lock()
    call.locked()
    call.headed(Head(500, "text/plain"))
    assert call.received(b"down") == Unlock(Reply(404, "application/json", b'{"lost": true}'))
    assert call.done
    assert e.sessions.failures("s-1") == 1
    assert call.ref.current.attempts[-1].decision == Decision(
        Action.STOP, Reason.REINITIALISE_FAILED
    )


def test_the_duplicate_guard_holds_a_repeat_of_an_unsafe_call_that_may_have_run() -> None:
    e = engine()
    first = e.begin(request("charge"), {}, {}, URL)
    assert first is not None
    assert first.start() == Send(None, AttemptKind.POST, ())
    error = ConnectionResetError("reset")
    assert first.failed(error, ErrorKind.READ, "reset") == Raise(error)  # it may have run
    again = e.begin(request("charge", request_id=8), {}, {}, URL)
    assert again is not None
    command = again.start()
    assert type(command) is Refuse
    assert command.outcome is Outcome.DUPLICATE_HELD
    assert "not sent: the same call (same server, tool and arguments)" in command.message
    assert "request id 7" in command.message
    [held_attempt] = again.ref.current.attempts
    assert held_attempt.kind is AttemptKind.HELD
    assert held_attempt.decision == Decision(Action.STOP, Reason.DUPLICATE_HELD)
    assert again.done


def test_an_answered_unsafe_call_leaves_nothing_for_the_guard_to_hold() -> None:
    e = engine()
    first = e.begin(request("charge"), {}, {}, URL)
    assert first is not None
    first.start()
    first.headed(JSON)
    assert first.received(answer(7)) == HandOn(None)
    again = e.begin(request("charge", request_id=8), {}, {}, URL)
    assert again is not None
    assert again.start() == Send(None, AttemptKind.POST, ())


class Asked(CircuitBreaker):
    """A breaker of a class of its own: the call asks it through the shell (``Admit``)."""


def test_a_breaker_of_the_shell_s_is_asked_before_the_post_and_its_no_refuses() -> None:
    breaker = Asked()
    e = engine(breaker=breaker)
    call = e.begin(request(), {}, {}, URL)
    assert call is not None
    key = e.server_key(URL)
    assert call.start() == Admit(breaker, key)
    command = call.admitted(False)
    assert command == Refuse(f"circuit open for {key}", Outcome.CIRCUIT_OPEN)
    [attempt] = call.ref.current.attempts
    assert attempt.kind is AttemptKind.HELD
    assert attempt.decision == Decision(Action.STOP, Reason.CIRCUIT_OPEN)


def test_a_breaker_s_yes_sends_and_a_retry_asks_it_again() -> None:
    breaker = Asked()
    e = engine(breaker=breaker)
    call = e.begin(request(), {}, {}, URL)
    assert call is not None
    admit = Admit(breaker, e.server_key(URL))
    assert call.start() == admit
    assert call.admitted(True) == Send(None, AttemptKind.POST, ())
    call.headed(Head(503))
    assert call.received(b"") == Sleep(0.2)
    assert call.slept() == admit  # every POST is admitted, a retry's too
    assert sent_message(call.admitted(True))["id"] == call.wire_id


def test_an_open_breaker_of_this_process_refuses_at_start_without_a_command_to_ask() -> None:
    breaker = CircuitBreaker(failure_threshold=1)
    e = engine(breaker=breaker)
    key = e.server_key(URL)
    assert breaker.allow(key)
    breaker.record(key, failed=True)
    call = e.begin(request(), {}, {}, URL)
    assert call is not None
    command = call.start()
    assert type(command) is Refuse and command.outcome is Outcome.CIRCUIT_OPEN
    assert command.message.startswith(f"circuit open for {key}")


class Shared(RetryBudget):
    """A budget of a class of its own: the call asks it through the shell (``Consult``)."""


def test_a_shared_budget_is_consulted_before_a_retry_and_its_no_ends_the_call() -> None:
    budget = Shared()
    e = engine(budget=budget)
    call = begin(e)
    call.start()
    call.headed(Head(503, "text/plain"))
    assert call.received(b"busy") == Consult(budget)
    assert call.consulted(False) == HandOn(None)  # the 503, as it came
    [attempt] = call.ref.current.attempts
    assert attempt.decision == Decision(Action.STOP, Reason.THROTTLED)


def test_a_shared_budget_s_yes_lets_the_retry_go_after_its_backoff() -> None:
    budget = Shared()
    e = engine(budget=budget)
    call = begin(e)
    call.start()
    call.headed(Head(503, "text/plain"))
    assert call.received(b"busy") == Consult(budget)
    assert call.consulted(True) == Sleep(0.2)
    assert sent_message(call.slept())["id"] == call.wire_id


def test_a_call_cancelled_in_flight_ends_abandoned_with_a_cancelled_attempt() -> None:
    class Cancelled(BaseException):
        pass

    call = begin(engine())
    call.start()
    call.abandoned(Cancelled("scope"))
    assert call.done
    [attempt] = call.ref.current.attempts
    assert attempt.decision == Decision(Action.STOP, Reason.ABANDONED)
    assert attempt.error_kind == ErrorKind.CANCELLED
    assert attempt.classification.detail == "ended by Cancelled: scope"


def test_a_call_cancelled_in_its_backoff_ends_with_the_retry_it_planned_unsent() -> None:
    call = begin(engine())
    call.start()
    call.headed(Head(503))
    assert call.received(b"") == Sleep(0.2)
    call.abandoned(None)
    assert call.done
    [attempt] = call.ref.current.attempts
    assert attempt.status == 503
    assert attempt.decision == Decision(Action.STOP, Reason.ABANDONED)


def test_a_stream_closed_by_the_caller_after_its_response_is_a_success() -> None:
    call = begin(engine())
    call.start()
    stream = call.headed(SSE)
    assert type(stream) is Stream
    assert stream.tracker.feed(encode_event(answer(7)))
    call.stream_closed(stream.tracker)
    assert call.done
    assert call.ref.current.outcome == Outcome.TOOL_SUCCESS


def test_a_stream_closed_by_the_caller_before_its_response_is_abandoned() -> None:
    call = begin(engine())
    call.start()
    stream = call.headed(SSE)
    assert type(stream) is Stream
    stream.tracker.feed(b": keep-alive\n\n")
    call.stream_closed(stream.tracker)
    [attempt] = call.ref.current.attempts
    assert attempt.decision == Decision(Action.STOP, Reason.ABANDONED)
    assert attempt.classification.outcome is Outcome.STREAM_INCOMPLETE
