"""Reading a call's record (core/access.py) from what the transport attached it to: a
response's extensions, or the exception that ended the call."""

from __future__ import annotations

import json

from mcp_safe_retry import Idempotency, RetryPolicy, get_record
from mcp_safe_retry.core.attempt_kinds import ErrorKind
from mcp_safe_retry.core.call import begin as begin_call
from mcp_safe_retry.core.events import Head
from mcp_safe_retry.extensions import RECORD_EXTENSION
from mcp_safe_retry.records import Outcome
from tests.core.drive import engine

POLICY = RetryPolicy(tools={"lookup": Idempotency.READ}, jitter="none")
REQUEST = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "charge"}}


class Answer:
    """Anything with ``extensions``, as an httpx or httpx2 response has."""

    def __init__(self, extensions: dict[str, object]) -> None:
        self.extensions = extensions


def test_the_record_of_a_response_is_read_from_its_extensions_as_it_stands_now() -> None:
    e = engine(policy=POLICY)
    call = begin_call(e, json.dumps(REQUEST).encode(), {}, {})
    assert call is not None
    answer = Answer({RECORD_EXTENSION: call.ref})
    call.start()
    call.headed(Head(200, "application/json"))
    result = {"jsonrpc": "2.0", "id": 7, "result": {"content": []}}
    call.received(json.dumps(result).encode())
    record = get_record(answer)
    assert record is not None and record == call.ref.current
    assert record.outcome == Outcome.TOOL_SUCCESS and record.post_count == 1


def test_the_record_of_the_exception_that_ended_a_call_is_attached_to_it() -> None:
    e = engine(policy=POLICY)
    call = begin_call(e, json.dumps(REQUEST).encode(), {}, {})
    assert call is not None
    call.start()
    error = ConnectionResetError("reset")
    call.failed(error, ErrorKind.READ, "reset")
    record = get_record(error)
    assert record is not None and record.outcome == Outcome.NETWORK_ERROR


def test_anything_else_has_no_record() -> None:
    assert get_record(Answer({})) is None
    assert get_record(Answer({RECORD_EXTENSION: "not a ref"})) is None
    assert get_record(ValueError("never through a transport")) is None
