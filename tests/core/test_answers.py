"""What a call hands on in place of the answer as it came (core/answers.py): the caller's id
restored, a re-issued stream's last answer as one SSE event, the contained error."""

from __future__ import annotations

import json

from mcp_safe_retry import Idempotency
from mcp_safe_retry.core.answers import contained, exact, restored, spliced
from mcp_safe_retry.core.jsonrpc import parse_request
from mcp_safe_retry.core.outcomes import verdict
from mcp_safe_retry.records import (
    CONTAINED_ERROR_CODE,
    Attempt,
    CallRecord,
    Decision,
    Outcome,
    Reason,
    RetryOrigin,
)

ANSWER = {"jsonrpc": "2.0", "id": "wire-1", "result": {"content": [], "n": 2**70}}


def test_an_answer_to_a_resent_request_goes_back_under_the_caller_s_id() -> None:
    body = restored(ANSWER, None, "wire-1", 7)
    assert body is not None and json.loads(body) == {**ANSWER, "id": 7}
    assert restored(ANSWER, None, 7, 7) is None  # never re-sent: handed on as it came
    assert restored({**ANSWER, "id": "other"}, None, "wire-1", 7) is None  # not its answer
    assert restored(ANSWER, None, "wire-1", None) is None  # a notification


def test_a_message_read_without_the_integer_scan_is_read_again_exactly() -> None:
    source = b'{"jsonrpc":"2.0","id":"wire-1","result":{"n":1180591620717411303424}}'
    rough = {"jsonrpc": "2.0", "id": "wire-1", "result": {"n": 1.1805916207174113e21}}
    assert exact(rough, source) == {"jsonrpc": "2.0", "id": "wire-1", "result": {"n": 2**70}}
    assert exact(ANSWER, None) is ANSWER


def test_a_reissued_stream_ends_with_the_last_answer_as_one_event_for_the_caller() -> None:
    event = spliced(ANSWER, None, 7)
    assert event is not None and event.startswith(b"event: message\ndata: ")
    assert json.loads(event.split(b"data: ", 1)[1]) == {**ANSWER, "id": 7}
    assert spliced({"jsonrpc": "2.0", "method": "notifications/progress"}, None, 7) is None


def _record(outcome: Outcome, status: int | None = None) -> CallRecord:
    ended = verdict(outcome, status=status, detail="reset" if status is None else None)
    attempt = Attempt(
        number=1,
        retry_origin=RetryOrigin.NONE,
        wire_id=7,
        classification=ended,
        status=status,
        decision=Decision.stop(Reason.NOT_IDEMPOTENT),
    )
    return CallRecord(
        method="tools/call",
        tool="charge",
        request_id=7,
        idempotency=Idempotency.UNSAFE,
        attempts=(attempt,),
        classification=ended,
        complete=True,
    )


def _facts(method: str = "tools/call", request_id: object = 7) -> object:
    body = {"jsonrpc": "2.0", "method": method, "params": {"name": "charge"}}
    if request_id is not None:
        body["id"] = request_id
    facts = parse_request(json.dumps(body).encode())
    assert facts is not None
    return facts


def test_a_network_failure_is_contained_only_when_failures_are() -> None:
    record = _record(Outcome.NETWORK_ERROR)
    body = contained(_facts(), record, failures=True, http_errors=False)  # type: ignore[arg-type]
    assert body is not None and json.loads(body)["error"]["code"] == CONTAINED_ERROR_CODE
    assert contained(_facts(), record, failures=False, http_errors=False) is None  # type: ignore[arg-type]
    notification = _facts(method="notifications/x", request_id=None)
    assert contained(notification, record, failures=True, http_errors=False) is None  # type: ignore[arg-type]
    initialize = _facts(method="initialize")
    assert contained(initialize, record, failures=True, http_errors=False) is None  # type: ignore[arg-type]


def test_an_http_error_is_contained_only_where_http_errors_are_and_as_an_event_in_a_stream() -> (
    None
):
    record = _record(Outcome.HTTP_ERROR, 502)
    assert contained(_facts(), record, failures=True, http_errors=False) is None  # type: ignore[arg-type]
    assert contained(_facts(), record, failures=True, http_errors=True) is not None  # type: ignore[arg-type]
    in_stream = contained(_facts(), record, failures=True, http_errors=False, in_stream=True)  # type: ignore[arg-type]
    assert in_stream is not None and in_stream.startswith(b"event: message\ndata: ")
    forbidden = _record(Outcome.HTTP_ERROR, 404)  # handed on for a layer above (a session)
    assert contained(_facts(), forbidden, failures=True, http_errors=True) is None  # type: ignore[arg-type]
