"""Containment (core/contain.py): which failures become a JSON-RPC error, and the error made
for one, no transport."""

from __future__ import annotations

import json

from mcp_safe_retry import Idempotency
from mcp_safe_retry.core.contain import (
    CONTAINED_SOURCE,
    HANDED_ON_STATUSES,
    contained_error,
    contains_http_error,
    server_error,
)
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


def test_which_statuses_are_contained() -> None:
    contained = [s for s in range(100, 600) if contains_http_error(s)]
    assert contained[0] == 400 and contained[-1] == 599
    assert not any(contains_http_error(s) for s in (*range(100, 400), *HANDED_ON_STATUSES, None))
    assert {401, 403, 404} == HANDED_ON_STATUSES


def test_the_server_s_own_error_in_a_non_2xx_body_is_answered_under_the_caller_s_id() -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": "x"}})
    made = server_error(body.encode(), "application/json", 7)
    assert made is not None
    assert json.loads(made) == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32603, "message": "x"},
    }
    assert server_error(b"<html>bad gateway</html>", "text/html", 7) is None


def test_a_contained_error_names_its_source_and_summarises_the_attempts() -> None:
    reset = verdict(Outcome.NETWORK_ERROR, error_kind="read", detail="reset")
    attempt = Attempt(
        number=1,
        retry_origin=RetryOrigin.NONE,
        wire_id=7,
        classification=reset,
        status=None,
        decision=Decision.stop(Reason.NOT_IDEMPOTENT),
        error_kind="read",
    )
    record = CallRecord(
        method="tools/call",
        tool="charge",
        request_id=7,
        idempotency=Idempotency.UNSAFE,
        attempts=(attempt,),
        classification=reset,
        complete=True,
    )
    message = json.loads(contained_error(record, 7))
    assert message["jsonrpc"] == "2.0" and message["id"] == 7
    error = message["error"]
    assert error["code"] == CONTAINED_ERROR_CODE
    assert error["message"] == "mcp-safe-retry: NETWORK_ERROR after 1 attempt(s): reset"
    data = error["data"]
    assert data["source"] == CONTAINED_SOURCE and data["local"] is True
    assert data["outcome"] == "NETWORK_ERROR"
    assert data["attempts"] == [
        {
            "number": 1,
            "outcome": "NETWORK_ERROR",
            "httpStatus": None,
            "errorKind": "read",
            "reason": "not_idempotent",
            "delivery": "may_have_run",
        }
    ]
    assert "charge" not in json.dumps(data["attempts"])  # never an argument or a body
