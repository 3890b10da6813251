"""Faults inside HTTP 200 answers, seen by plain httpx: JSON-RPC errors, isError, malformed."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from kitchen_wire import (
    StartKitchen,
    answer,
    call_tool,
    legacy_call_tool,
    legacy_handshake,
    sse_messages,
)

from mcp_safe_retry.kitchen import MALFORMED_KINDS, KitchenServer

pytestmark = pytest.mark.e2e


def test_jsonrpc_error_on_the_second_call_only(kitchen: KitchenServer) -> None:
    params = {"code": -32001, "message": "Upstream timed out", "data": {"x": 1}, "onInvocation": 2}
    url = kitchen.url_for("errors.jsonrpc_error", params)
    with httpx.Client(timeout=5) as client:
        responses = [
            call_tool(client, url, "charge", {"key": "k", "amount": 1}, request_id=i)
            for i in (1, 2, 3)
        ]
    assert [r.status_code for r in responses] == [200, 200, 200]
    assert responses[1].headers["content-type"] == "application/json"
    assert responses[1].json() == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {"code": -32001, "message": "Upstream timed out", "data": {"x": 1}},
    }
    assert "result" in responses[2].json()
    # The refused call never reached the tool.
    assert kitchen.state_of(url).executions_by_key == {"charge": {"k": 2}}


def test_jsonrpc_error_is_framed_as_sse_in_a_legacy_sse_session(kitchen: KitchenServer) -> None:
    url = kitchen.url_for("errors.jsonrpc_error", {})
    with httpx.Client(timeout=5) as client:
        session = legacy_handshake(client, url)
        response = legacy_call_tool(client, url, session, "lookup", {"key": "a"}, request_id=9)
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["mcp-session-id"] == session
    assert sse_messages(response.text) == [
        {"jsonrpc": "2.0", "id": 9, "error": {"code": -32603, "message": "Internal error"}}
    ]


@pytest.mark.parametrize("modern", [pytest.param(True, id="2026"), pytest.param(False, id="2025")])
def test_tool_error_result(kitchen: KitchenServer, modern: bool) -> None:
    url = kitchen.url_for("errors.tool_error", {"errorMessage": "card declined"})
    with httpx.Client(timeout=5) as client:
        if modern:
            response = call_tool(client, url, "charge", {"key": "k", "amount": 1}, request_id=3)
        else:
            session = legacy_handshake(client, url)
            response = legacy_call_tool(
                client, url, session, "charge", {"key": "k", "amount": 1}, request_id=3
            )
    expected: dict[str, Any] = {
        "content": [{"type": "text", "text": "card declined"}],
        "isError": True,
    }
    if modern:
        expected["resultType"] = "complete"
    assert answer(response) == {"jsonrpc": "2.0", "id": 3, "result": expected}
    assert kitchen.state_of(url).executions == {}


Check = Callable[[httpx.Response], None]


def _json_of(response: httpx.Response) -> dict[str, Any]:
    return answer(response)


def _check_invalid_json(response: httpx.Response) -> None:
    text = (
        sse_data(response)
        if response.headers["content-type"].startswith("text/event-stream")
        else response.text
    )
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    assert text.startswith('{"jsonrpc":"2.0"')


def sse_data(response: httpx.Response) -> str:
    [line] = [line for line in response.text.splitlines() if line.startswith("data: ")]
    return line.removeprefix("data: ")


EXPECTED: dict[str, Check] = {
    "invalid_json": _check_invalid_json,
    "wrong_id": lambda r: _assert(_json_of(r)["id"] == 1007 and "result" in _json_of(r)),
    "missing_jsonrpc": lambda r: _assert("jsonrpc" not in _json_of(r) and "result" in _json_of(r)),
    "result_and_error": lambda r: _assert({"result", "error"} <= set(_json_of(r))),
    "wrong_content_type": lambda r: _assert(
        r.headers["content-type"].startswith("text/html") and r.text.startswith("<html>")
    ),
    "empty_body": lambda r: _assert(
        r.headers["content-type"] == "application/json" and r.content == b""
    ),
}


def _assert(condition: bool) -> None:
    assert condition


def test_every_malformed_kind_has_a_check() -> None:
    assert set(EXPECTED) == set(MALFORMED_KINDS)


@pytest.mark.parametrize("kind", MALFORMED_KINDS)
@pytest.mark.parametrize(
    "stateless", [pytest.param(True, id="2026-json"), pytest.param(False, id="2025-sse")]
)
def test_malformed_answers_after_the_tool_ran(
    start_kitchen: StartKitchen, kind: str, stateless: bool
) -> None:
    kitchen = start_kitchen(stateless=stateless, json_response=stateless)
    url = kitchen.url_for("malformed", {"kind": kind})
    with httpx.Client(timeout=5) as client:
        if stateless:
            response = call_tool(client, url, "charge", {"key": "k", "amount": 1}, request_id=7)
        else:
            session = legacy_handshake(client, url)
            response = legacy_call_tool(
                client, url, session, "charge", {"key": "k", "amount": 1}, request_id=7
            )
    assert response.status_code == 200
    if kind not in ("wrong_content_type", "empty_body"):
        framing = "application/json" if stateless else "text/event-stream"
        assert response.headers["content-type"] == framing
    EXPECTED[kind](response)
    assert kitchen.state_of(url).executions_by_key == {"charge": {"k": 1}}
    [call] = kitchen.state_of(url).calls()
    assert call.fault == f"malformed:{kind}"
