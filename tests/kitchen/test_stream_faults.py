"""Cut streams and dropped connections, seen by plain httpx: what arrives, what is raised."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from kitchen_wire import (
    StartKitchen,
    legacy_handshake,
    legacy_headers,
    modern_body,
    modern_headers,
    sse_messages,
)

from mcp_safe_retry.kitchen import KitchenServer

pytestmark = pytest.mark.e2e

CHARGE: dict[str, Any] = {"name": "charge", "arguments": {"key": "k", "amount": 1}}


def stream_call(
    client: httpx.Client, url: str, params: dict[str, Any] = CHARGE
) -> tuple[httpx.Response, bytes]:
    """POST a 2026-07-28 tools/call and read the body to its end; raises what httpx raises."""
    body = modern_body(1, "tools/call", params)
    headers = modern_headers("tools/call", str(params["name"]))
    received = b""
    with client.stream("POST", url, json=body, headers=headers) as response:
        for chunk in response.iter_bytes():
            received += chunk
    return response, received


@pytest.mark.parametrize("when", ["before", "after"])
def test_sse_truncated_clean_end(kitchen: KitchenServer, when: str) -> None:
    url = kitchen.url_for("sse_truncated", {"events": 2, "when": when})
    with httpx.Client(timeout=5) as client:
        response, received = stream_call(client, url)
        again, _ = stream_call(client, url)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    messages = sse_messages(received.decode())
    assert [m["method"] for m in messages] == ["notifications/message"] * 2
    assert not any("id" in m for m in messages)  # no response ever arrives
    assert again.headers["content-type"] == "application/json"  # times=1: next call served
    executed = 2 if when == "after" else 1
    assert kitchen.state_of(url).executions_by_key == {"charge": {"k": executed}}


@pytest.mark.parametrize("when", ["before", "after"])
def test_sse_truncated_abrupt_drop(kitchen: KitchenServer, when: str) -> None:
    url = kitchen.url_for("sse_truncated", {"events": 1, "when": when, "mode": "abrupt"})
    with (
        httpx.Client(timeout=5) as client,
        pytest.raises(httpx.RemoteProtocolError, match="incomplete chunked read"),
    ):
        stream_call(client, url)
    assert kitchen.state_of(url).executions == ({"charge": 1} if when == "after" else {})
    [post] = kitchen.state_of(url).posts
    assert (post.status, post.fault) == (200, "sse_truncated")


def test_sse_truncated_sends_progress_to_a_caller_that_asked(kitchen: KitchenServer) -> None:
    url = kitchen.url_for("sse_truncated", {"events": 3})
    params = {**CHARGE, "_meta": {"progressToken": "p1"}}
    with httpx.Client(timeout=5) as client:
        _, received = stream_call(client, url, params)
    messages = sse_messages(received.decode())
    assert [(m["method"], m["params"]["progressToken"]) for m in messages] == [
        ("notifications/progress", "p1")
    ] * 3
    assert [m["params"]["progress"] for m in messages] == [1, 2, 3]


def test_sse_truncated_keeps_the_legacy_session(kitchen: KitchenServer) -> None:
    url = kitchen.url_for("sse_truncated", {})
    body = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": CHARGE}
    with httpx.Client(timeout=5) as client:
        session = legacy_handshake(client, url)
        cut = client.post(url, json=body, headers=legacy_headers(session))
        served = client.post(url, json={**body, "id": 6}, headers=legacy_headers(session))
    assert cut.headers["mcp-session-id"] == session
    assert [m.get("id") for m in sse_messages(cut.text)] == [None]
    assert [m["id"] for m in sse_messages(served.text)] == [6]


@pytest.mark.parametrize(
    ("mode", "error", "message"),
    [
        pytest.param(
            "close", httpx.RemoteProtocolError, "without sending a response", id="close-FIN"
        ),
        pytest.param("reset", httpx.ReadError, "reset", id="reset-RST"),
        pytest.param(
            "partial", httpx.RemoteProtocolError, "complete message body", id="partial-body"
        ),
    ],
)
@pytest.mark.parametrize("when", ["before", "after"])
def test_connection_abort(
    kitchen: KitchenServer, when: str, mode: str, error: type[Exception], message: str
) -> None:
    url = kitchen.url_for("connection_abort", {"when": when, "mode": mode})
    with httpx.Client(timeout=5) as client:
        with pytest.raises(error, match=message):
            stream_call(client, url)
        served, _ = stream_call(client, url)  # times=1: a new connection is served
    assert served.status_code == 200
    executed = 2 if when == "after" else 1
    assert kitchen.state_of(url).executions_by_key == {"charge": {"k": executed}}
    first = kitchen.state_of(url).posts[0]
    assert first.fault == "connection_abort"
    assert first.status == (200 if mode == "partial" else None)


def test_connection_abort_only_hits_the_selected_tool(kitchen: KitchenServer) -> None:
    url = kitchen.url_for("connection_abort", {"tool": "charge"})
    lookup: dict[str, Any] = {"name": "lookup", "arguments": {"key": "a"}}
    with httpx.Client(timeout=5) as client:
        listed = client.post(
            url, json=modern_body(1, "tools/list"), headers=modern_headers("tools/list")
        )
        looked_up, _ = stream_call(client, url, lookup)
        with pytest.raises(httpx.RemoteProtocolError):
            stream_call(client, url)
    assert (listed.status_code, looked_up.status_code) == (200, 200)


def test_the_sdk_streams_sse_on_2026_when_progress_is_asked(start_kitchen: StartKitchen) -> None:
    # Without notifications the 2026-07-28 entry answers JSON; progress commits it to SSE.
    kitchen = start_kitchen()
    slow: dict[str, Any] = {"name": "slow", "arguments": {"delay_ms": 20}}
    with httpx.Client(timeout=5) as client:
        plain, _ = stream_call(client, kitchen.url, slow)
        streamed, received = stream_call(
            client, kitchen.url, {**slow, "_meta": {"progressToken": 7}}
        )
    assert plain.headers["content-type"] == "application/json"
    assert streamed.headers["content-type"] == "text/event-stream"
    messages = sse_messages(received.decode())
    assert [m.get("method") for m in messages] == ["notifications/progress"] * 5 + [None]
    assert messages[-1]["result"]["structuredContent"] == {"delayMs": 20, "key": None}
