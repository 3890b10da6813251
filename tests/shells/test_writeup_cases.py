"""The eleven cases of the write-up that started the project, compared exactly."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from mcp_safe_retry import RetryTransport, classify, get_record

pytestmark = pytest.mark.usefixtures("json_backend")  # both JSON parsers

GOOD = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {
        "resultType": "complete",
        "content": [{"type": "text", "text": "ok"}],
        "isError": False,
    },
}
RPC_ERROR = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "invalid params"}}
TOOL_ERROR = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {
        "resultType": "complete",
        "content": [{"type": "text", "text": "failed"}],
        "isError": True,
    },
}
INPUT_REQUIRED = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {
        "resultType": "input_required",
        "inputRequests": {
            "approval": {
                "method": "elicitation/create",
                "params": {"mode": "form", "message": "synthetic input"},
            }
        },
    },
}
LEGACY = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {"content": [{"type": "text", "text": "legacy ok"}], "isError": False},
}
BAD_CONTENT = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {"resultType": "complete", "content": "not-an-array", "isError": False},
}

CASES = [
    pytest.param(200, GOOD, {"layer": "application", "outcome": "TOOL_SUCCESS"}, id="baseline"),
    pytest.param(
        200,
        RPC_ERROR,
        {"layer": "protocol", "outcome": "JSONRPC_ERROR", "code": -32602},
        id="jsonrpc_error",
    ),
    pytest.param(200, TOOL_ERROR, {"layer": "application", "outcome": "TOOL_ERROR"}, id="isError"),
    pytest.param(
        500,
        GOOD,
        {"layer": "transport", "outcome": "HTTP_ERROR", "status": 500},
        id="transport_precedence",
    ),
    pytest.param(
        200, "{unclosed", {"layer": "protocol", "outcome": "MALFORMED_JSON"}, id="bad_json"
    ),
    pytest.param(
        200,
        {**GOOD, "error": RPC_ERROR["error"]},
        {"layer": "protocol", "outcome": "INVALID_ENVELOPE"},
        id="conflicting_envelope",
    ),
    pytest.param(
        200, {**GOOD, "id": 99}, {"layer": "protocol", "outcome": "INVALID_ENVELOPE"}, id="wrong_id"
    ),
    pytest.param(
        200, INPUT_REQUIRED, {"layer": "interaction", "outcome": "INPUT_REQUIRED"}, id="input_req"
    ),
    pytest.param(200, LEGACY, {"layer": "application", "outcome": "TOOL_SUCCESS"}, id="legacy"),
    pytest.param(
        200, BAD_CONTENT, {"layer": "protocol", "outcome": "INVALID_TOOL_RESULT"}, id="bad_content"
    ),
]


def _body(payload: Any) -> bytes:
    return payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()


@pytest.mark.parametrize(("status", "payload", "expected"), CASES)
def test_classify(status: int, payload: Any, expected: dict[str, Any]) -> None:
    assert classify(status, _body(payload)).as_dict() == expected


@pytest.mark.parametrize(("status", "payload", "expected"), CASES)
def test_through_the_transport(status: int, payload: Any, expected: dict[str, Any]) -> None:
    posts: list[httpx.Request] = []

    def server(request: httpx.Request) -> httpx.Response:
        posts.append(request)
        return httpx.Response(
            status, content=_body(payload), headers={"content-type": "application/json"}
        )

    transport = RetryTransport(httpx.MockTransport(server), sleep=lambda _: None)
    with httpx.Client(transport=transport) as client:
        response = client.post(
            "http://mcp.test/mcp",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "synthetic"},
            },
        )
    record = get_record(response)
    assert record is not None
    assert record.classification is not None
    assert record.classification.as_dict() == expected
    assert len(posts) == 1  # an unconfigured tool is UNSAFE: never re-sent
    assert response.content == _body(payload)  # handed on intact


def test_503_then_200_needs_an_explicit_second_post() -> None:
    posts: list[int] = []

    def server(request: httpx.Request) -> httpx.Response:
        posts.append(1)
        if len(posts) == 1:
            return httpx.Response(503, json={"note": "synthetic outage"})
        return httpx.Response(200, json=GOOD)

    transport = RetryTransport(httpx.MockTransport(server), sleep=lambda _: None)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "synthetic"}}
    with httpx.Client(transport=transport) as client:
        first = client.post("http://mcp.test/mcp", json=body)
        first_record = get_record(first)
        assert first_record is not None and first_record.classification is not None
        assert first_record.classification.as_dict() == {
            "layer": "transport",
            "outcome": "HTTP_ERROR",
            "status": 503,
        }
        assert len(posts) == 1, "a tools/call is never retried automatically"
        second = client.post("http://mcp.test/mcp", json=body)
    second_record = get_record(second)
    assert second_record is not None and second_record.classification is not None
    assert second_record.classification.as_dict() == {
        "layer": "application",
        "outcome": "TOOL_SUCCESS",
    }
    assert len(posts) == 2
    # The repeat of a failed call is recognised as the application's re-send.
    assert first_record.to_dict()["retryOrigin"] == "none"
    assert second_record.to_dict()["retryOrigin"] == "application"
