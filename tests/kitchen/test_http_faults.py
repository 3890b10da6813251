"""Status-level faults on the wire, seen by plain httpx: sequences, 429, 404 expiry, delay."""

from __future__ import annotations

import email.utils
import time

import httpx
import pytest
from kitchen_wire import (
    StartKitchen,
    call_tool,
    legacy_call_tool,
    legacy_handshake,
    legacy_headers,
    modern_body,
    modern_headers,
)

from mcp_safe_retry.kitchen import KitchenServer

pytestmark = pytest.mark.e2e


def test_baseline_answers_from_the_real_server(kitchen: KitchenServer) -> None:
    with httpx.Client(timeout=5) as client:
        response = call_tool(client, kitchen.url, "lookup", {"key": "a"}, request_id=41)
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == 41
    assert body["result"]["structuredContent"] == {"key": "a", "value": "ca978112ca1bbdca"}
    assert kitchen.state.executions == {"lookup": 1}
    [post] = kitchen.state.posts
    assert (post.method, post.request_id, post.tool, post.status, post.fault) == (
        "tools/call",
        41,
        "lookup",
        200,
        None,
    )


def test_baseline_delay_holds_matching_calls_only(kitchen: KitchenServer) -> None:
    url = kitchen.url_for("baseline", {"delayMs": 300, "tool": "slow"})
    with httpx.Client(timeout=5) as client:
        started = time.monotonic()
        call_tool(client, url, "lookup", {"key": "a"})
        undelayed = time.monotonic() - started
        started = time.monotonic()
        call_tool(client, url, "slow", {"delay_ms": 0})
        delayed = time.monotonic() - started
    assert delayed >= 0.3
    assert undelayed < 0.3
    assert [p.fault for p in kitchen.state_of(url).posts] == [None, "delay"]


def test_status_sequence_counts_the_handshake_too(start_kitchen: StartKitchen) -> None:
    kitchen = start_kitchen("errors.http_status_sequence", {"statusCodes": [503, 502, 200]})
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}
    with httpx.Client(timeout=5) as client:
        first = client.post(kitchen.url, json=init, headers=legacy_headers(None))
        second = client.post(kitchen.url, json=init, headers=legacy_headers(None))
        session = legacy_handshake(client, kitchen.url)  # POSTs 3 and 4 pass
        third = legacy_call_tool(client, kitchen.url, session, "charge", {"key": "k", "amount": 1})
    assert (first.status_code, first.content, first.headers.get("content-type")) == (503, b"", None)
    assert (second.status_code, second.content) == (502, b"")
    assert third.status_code == 200
    assert [(p.method, p.status) for p in kitchen.state.posts] == [
        ("initialize", 503),
        ("initialize", 502),
        ("initialize", 200),
        ("notifications/initialized", 202),
        ("tools/call", 200),
    ]
    assert kitchen.state.executions_by_key == {"charge": {"k": 1}}


def test_rate_limit_with_jsonrpc_body_and_seconds(kitchen: KitchenServer) -> None:
    url = kitchen.url_for("rate_limit", {"retryAfter": 3, "body": "jsonrpc", "times": 2})
    with httpx.Client(timeout=5) as client:
        listed = client.post(
            url, json=modern_body(1, "tools/list"), headers=modern_headers("tools/list")
        )
        limited = [
            call_tool(client, url, "charge", {"key": "k", "amount": 1}, request_id=i)
            for i in (2, 3)
        ]
        allowed = call_tool(client, url, "charge", {"key": "k", "amount": 1}, request_id=4)
    assert listed.status_code == 200  # only tools/call is limited by default
    for response, request_id in zip(limited, (2, 3), strict=True):
        assert response.status_code == 429
        assert response.headers["retry-after"] == "3"
        assert response.json() == {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": {"code": -32000, "message": "Rate limit exceeded"},
        }
    assert allowed.status_code == 200
    assert kitchen.state_of(url).executions_by_key == {"charge": {"k": 1}}


def test_rate_limit_http_date_and_null_result(kitchen: KitchenServer) -> None:
    params = {
        "retryAfter": 120,
        "retryAfterFormat": "http-date",
        "body": "jsonrpc",
        "nullResult": True,
        "method": "*",
    }
    url = kitchen.url_for("rate_limit", params)
    with httpx.Client(timeout=5) as client:
        before = time.time()
        response = client.post(
            url, json=modern_body(5, "tools/list"), headers=modern_headers("tools/list")
        )
    assert response.status_code == 429
    when = email.utils.parsedate_to_datetime(response.headers["retry-after"]).timestamp()
    assert before + 118 <= when <= before + 122
    assert response.json()["result"] is None
    assert response.json()["error"]["code"] == -32000


def test_rate_limit_empty_body_by_default(kitchen: KitchenServer) -> None:
    url = kitchen.url_for("rate_limit", {})
    with httpx.Client(timeout=5) as client:
        response = call_tool(client, url, "lookup", {"key": "a"})
    assert (response.status_code, response.content, response.headers["retry-after"]) == (
        429,
        b"",
        "1",
    )
    assert kitchen.state_of(url).executions == {}


def test_session_expired_answers_404_until_a_new_session(kitchen: KitchenServer) -> None:
    # The initialized notification is the session's first POST, the first call its second.
    url = kitchen.url_for("session_expired", {"afterRequests": 2})
    with httpx.Client(timeout=5) as client:
        old = legacy_handshake(client, url)
        first = legacy_call_tool(
            client, url, old, "charge", {"key": "k", "amount": 1}, request_id=1
        )
        expired = legacy_call_tool(
            client, url, old, "charge", {"key": "k", "amount": 1}, request_id=2
        )
        stream = client.get(url, headers=legacy_headers(old))
        new = legacy_handshake(client, url)
        again = legacy_call_tool(
            client, url, new, "charge", {"key": "k", "amount": 1}, request_id=3
        )
    assert first.status_code == 200
    assert expired.status_code == 404
    assert expired.json() == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {"code": -32600, "message": "Session not found"},
    }
    assert stream.status_code == 404
    assert new is not None
    assert new != old
    assert again.status_code == 200
    assert kitchen.state_of(url).executions_by_key == {"charge": {"k": 2}}
    faults = [p.fault for p in kitchen.state_of(url).posts if p.method == "tools/call"]
    assert faults == [None, "session_expired", None]


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
def test_session_dropped_gets_the_real_servers_404_between_two_calls(
    start_kitchen: StartKitchen, json_response: bool
) -> None:
    kitchen = start_kitchen(json_response=json_response)
    url = kitchen.url_for("session_dropped", {})
    with httpx.Client(timeout=5) as client:
        old = legacy_handshake(client, url)
        first = legacy_call_tool(
            client, url, old, "charge", {"key": "k", "amount": 1}, request_id=1
        )
        gone = legacy_call_tool(client, url, old, "charge", {"key": "k", "amount": 1}, request_id=2)
        stream = client.get(url, headers=legacy_headers(old))
        deleted = client.delete(url, headers=legacy_headers(old))
        new = legacy_handshake(client, url)
        again = legacy_call_tool(
            client, url, new, "charge", {"key": "k", "amount": 1}, request_id=3
        )
        later = legacy_call_tool(
            client, url, new, "charge", {"key": "k", "amount": 1}, request_id=4
        )
    assert first.status_code == 200
    # The real server's own answer for an unknown session: no id, code -32600.
    assert gone.status_code == 404
    assert gone.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Session not found"},
    }
    assert stream.status_code == 404 and deleted.status_code == 404
    assert new is not None and new != old
    assert again.status_code == 200 and later.status_code == 200  # once per run
    assert kitchen.state_of(url).executions_by_key == {"charge": {"k": 3}}
    calls = [p for p in kitchen.state_of(url).posts if p.method == "tools/call"]
    assert [(p.status, p.fault) for p in calls] == [
        (200, "session_dropped"),  # answered, then the session was ended
        (404, None),  # the real server answered: the kitchen passed it through
        (200, None),
        (200, None),
    ]


def test_legacy_only_refuses_modern_requests_like_mcp_1x(start_kitchen: StartKitchen) -> None:
    kitchen = start_kitchen(legacy_only=True)
    with httpx.Client(timeout=5) as client:
        refused = call_tool(client, kitchen.url, "lookup", {"key": "a"})
        session = legacy_handshake(client, kitchen.url)
        served = legacy_call_tool(client, kitchen.url, session, "lookup", {"key": "a"})
    assert refused.status_code == 400
    assert refused.json() == {
        "jsonrpc": "2.0",
        "id": "server-error",
        "error": {"code": -32600, "message": "Bad Request: Missing session ID"},
    }
    assert served.status_code == 200
    assert kitchen.state.executions == {"lookup": 1}
