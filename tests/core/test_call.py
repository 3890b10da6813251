"""The call's state machine, driven without I/O: events in, commands out."""

from __future__ import annotations

import json

import pytest

from mcp_safe_retry import CircuitBreaker, Idempotency, RetryBudget
from mcp_safe_retry.core.attempt_kinds import AttemptKind, ErrorKind
from mcp_safe_retry.core.call import begin as begin_call
from mcp_safe_retry.core.commands import (
    Answer,
    Ask,
    Break,
    Raise,
    Read,
    Refuse,
    Send,
    Sleep,
    Stream,
)
from mcp_safe_retry.core.events import Head
from mcp_safe_retry.core.sse import encode_event
from mcp_safe_retry.records import CONTAINED_ERROR_CODE, Decision, Outcome, Reason
from tests.core.drive import (
    JSON,
    REQUEST,
    SSE,
    URL,
    answer,
    begin,
    engine,
    handed_on,
    request,
    sent_message,
)


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
    assert isinstance(handed, Answer) and handed.body is not None
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


def test_a_contained_failure_is_an_answer_made_here() -> None:
    call = begin(engine(contain_failures=True), tool="charge")
    call.start()
    command = call.failed(ConnectionError("reset"), ErrorKind.READ, "reset")
    assert isinstance(command, Answer) and command.body is not None
    assert (command.status, command.content_type) == (200, "application/json")
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
    assert isinstance(end, Answer) and end.body is not None
    assert end.body.startswith(b"event: message\ndata: ")
    data = json.loads(end.body.split(b"data: ", 1)[1])
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
    assert call.stream_ended(stream.tracker) == Answer()
    assert call.ref.current.outcome == Outcome.TOOL_SUCCESS


# -- each sequence of a call, driven event by event: the commands it answers, exactly ------


def test_a_success_is_send_read_hand_on_the_body_as_read() -> None:
    e = engine()
    call = begin(e)
    assert call.start() == Send(None, AttemptKind.POST, ())
    assert call.headed(JSON) == Read(e.max_event_bytes)
    assert call.received(answer(7)) == Answer(None)  # never re-sent: the body as it came
    record = call.ref.current
    assert call.done
    assert [(a.number, a.status, a.decision) for a in record.attempts] == [
        (1, 200, Decision.stop(Reason.SUCCESS))
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
    assert call.outgoing.wire_id == message["id"]
    assert call.headed(JSON) == Read(e.max_event_bytes)
    handed = call.received(answer(message["id"]))
    assert handed == Answer(handed_on())  # the caller's id restored
    decisions = [a.decision for a in call.ref.current.attempts]
    assert decisions == [
        Decision(True, Reason.RETRYABLE_STATUS, 0.2),
        Decision.stop(Reason.SUCCESS),
    ]


def test_a_retry_honours_retry_after_in_its_sleep() -> None:
    e = engine()
    call = begin(e)
    call.start()
    call.headed(Head(503, "text/plain", retry_after="1"))
    assert call.received(b"") == Sleep(1.0)
    assert call.ref.current.attempts[0].decision == Decision(True, Reason.RETRYABLE_STATUS, 1.0)


def test_an_unsafe_call_answered_503_is_not_retried_the_503_is_handed_on() -> None:
    e = engine()
    call = begin(e, tool="charge")
    assert call.idempotency is Idempotency.UNSAFE
    assert call.start() == Send(None, AttemptKind.POST, ())
    assert call.headed(Head(503, "text/plain")) == Read(e.max_event_bytes)
    assert call.received(b"busy") == Answer(None)
    assert call.done
    [attempt] = call.ref.current.attempts
    assert attempt.decision == Decision.stop(Reason.NOT_IDEMPOTENT)
    assert call.ref.current.outcome == Outcome.HTTP_ERROR


def test_a_contained_failure_answers_the_caller_s_id_with_the_contained_error() -> None:
    call = begin(engine(contain_failures=True), tool="charge")
    assert call.start() == Send(None, AttemptKind.POST, ())
    command = call.failed(ConnectionResetError("reset"), ErrorKind.READ, "reset")
    assert type(command) is Answer and command.body is not None
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
    assert call.received(answer(wire_id)) == Answer(handed_on())


def test_the_duplicate_guard_holds_a_repeat_of_an_unsafe_call_that_may_have_run() -> None:
    e = engine()
    first = begin_call(e, request("charge"), {}, {}, URL)
    assert first is not None
    assert first.start() == Send(None, AttemptKind.POST, ())
    error = ConnectionResetError("reset")
    assert first.failed(error, ErrorKind.READ, "reset") == Raise(error)  # it may have run
    again = begin_call(e, request("charge", request_id=8), {}, {}, URL)
    assert again is not None
    command = again.start()
    assert type(command) is Refuse
    assert command.outcome is Outcome.DUPLICATE_HELD
    assert "not sent: the same call (same server, tool and arguments)" in command.message
    assert "request id 7" in command.message
    [held_attempt] = again.ref.current.attempts
    assert held_attempt.kind is AttemptKind.HELD
    assert held_attempt.decision == Decision.stop(Reason.DUPLICATE_HELD)
    assert again.done


def test_an_answered_unsafe_call_leaves_nothing_for_the_guard_to_hold() -> None:
    e = engine()
    first = begin_call(e, request("charge"), {}, {}, URL)
    assert first is not None
    first.start()
    first.headed(JSON)
    assert first.received(answer(7)) == Answer(None)
    again = begin_call(e, request("charge", request_id=8), {}, {}, URL)
    assert again is not None
    assert again.start() == Send(None, AttemptKind.POST, ())


class Asked(CircuitBreaker):
    """A breaker that says it does not answer inline (as a shared one): the call asks it
    through the shell (``Ask``)."""

    answers_inline = False


def test_a_breaker_of_the_shell_s_is_asked_before_the_post_and_its_no_refuses() -> None:
    breaker = Asked()
    e = engine(breaker=breaker)
    call = begin_call(e, request(), {}, {}, URL)
    assert call is not None
    key = e.server_key(URL)
    assert call.start() == Ask(breaker, key)
    command = call.answered(False)
    assert command == Refuse(f"circuit open for {key}", Outcome.CIRCUIT_OPEN)
    [attempt] = call.ref.current.attempts
    assert attempt.kind is AttemptKind.HELD
    assert attempt.decision == Decision.stop(Reason.CIRCUIT_OPEN)


def test_a_breaker_s_yes_sends_and_a_retry_asks_it_again() -> None:
    breaker = Asked()
    e = engine(breaker=breaker)
    call = begin_call(e, request(), {}, {}, URL)
    assert call is not None
    admit = Ask(breaker, e.server_key(URL))
    assert call.start() == admit
    assert call.answered(True) == Send(None, AttemptKind.POST, ())
    call.headed(Head(503))
    assert call.received(b"") == Sleep(0.2)
    assert call.slept() == admit  # every POST is admitted, a retry's too
    assert sent_message(call.answered(True))["id"] == call.outgoing.wire_id


def test_an_open_breaker_of_this_process_refuses_at_start_without_a_command_to_ask() -> None:
    breaker = CircuitBreaker(failure_threshold=1)
    e = engine(breaker=breaker)
    key = e.server_key(URL)
    assert breaker.allow(key)
    breaker.record(key, failed=True)
    call = begin_call(e, request(), {}, {}, URL)
    assert call is not None
    command = call.start()
    assert type(command) is Refuse and command.outcome is Outcome.CIRCUIT_OPEN
    assert command.message.startswith(f"circuit open for {key}")


class Shared(RetryBudget):
    """A budget that says it does not answer inline (as a shared one): the call asks it
    through the shell (``Ask``)."""

    answers_inline = False


def test_a_shared_budget_is_consulted_before_a_retry_and_its_no_ends_the_call() -> None:
    budget = Shared()
    e = engine(budget=budget)
    call = begin(e)
    call.start()
    call.headed(Head(503, "text/plain"))
    assert call.received(b"busy") == Ask(budget=budget)
    assert call.answered(False) == Answer(None)  # the 503, as it came
    [attempt] = call.ref.current.attempts
    assert attempt.decision == Decision.stop(Reason.THROTTLED)


def test_a_shared_budget_s_yes_lets_the_retry_go_after_its_backoff() -> None:
    budget = Shared()
    e = engine(budget=budget)
    call = begin(e)
    call.start()
    call.headed(Head(503, "text/plain"))
    assert call.received(b"busy") == Ask(budget=budget)
    assert call.answered(True) == Sleep(0.2)
    assert sent_message(call.slept())["id"] == call.outgoing.wire_id


def test_a_call_cancelled_in_flight_ends_abandoned_with_a_cancelled_attempt() -> None:
    class Cancelled(BaseException):
        pass

    call = begin(engine())
    call.start()
    call.abandoned(Cancelled("scope"))
    assert call.done
    [attempt] = call.ref.current.attempts
    assert attempt.decision == Decision.stop(Reason.ABANDONED)
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
    assert attempt.decision == Decision.stop(Reason.ABANDONED)


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
    assert attempt.decision == Decision.stop(Reason.ABANDONED)
    assert attempt.classification.outcome is Outcome.STREAM_INCOMPLETE
