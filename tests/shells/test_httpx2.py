"""The httpx2 shells: generated from the same source, driven by the same engine."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from mcp_safe_retry import BodyTooLarge, Idempotency, RetryPolicy, get_record
from mcp_safe_retry.httpx2 import AsyncRetryTransport, RetryTransport
from mcp_safe_retry.records import Outcome, RetryOrigin

URL = "http://mcp.test/mcp"
POLICY = RetryPolicy(tools={"lookup": Idempotency.READ})


def flaky(statuses: list[int], posts: list[Any]) -> httpx2.MockTransport:
    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        posts.append(body["id"])
        status = statuses[min(len(posts), len(statuses)) - 1]
        if status != 200:
            return httpx2.Response(status)
        result = {"content": [{"type": "text", "text": "ok"}]}
        return httpx2.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": result})

    return httpx2.MockTransport(handler)


CALL = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "lookup"}}


def test_sync_retry() -> None:
    posts: list[Any] = []
    transport = RetryTransport(flaky([503, 200], posts), policy=POLICY, sleep=lambda _: None)
    with httpx2.Client(transport=transport) as client:
        response = client.post(URL, json=CALL)
    assert response.json()["id"] == 5
    assert posts[0] == 5 and posts[1] != 5
    record = get_record(response)
    assert record is not None
    assert [a.retry_origin for a in record.attempts] == [RetryOrigin.NONE, RetryOrigin.SDK]


@pytest.mark.anyio
async def test_async_retry_and_network_error() -> None:
    posts: list[Any] = []
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    transport = AsyncRetryTransport(flaky([502, 502, 502], posts), policy=POLICY, sleep=sleep)
    async with httpx2.AsyncClient(transport=transport) as client:
        response = await client.post(URL, json=CALL)
    assert response.status_code == 502 and len(posts) == 3 and len(slept) == 2

    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("refused")

    failing = AsyncRetryTransport(httpx2.MockTransport(refuse), policy=POLICY, sleep=sleep)
    async with httpx2.AsyncClient(transport=failing) as client:
        with pytest.raises(httpx2.ConnectError):
            await client.post(URL, json=CALL)
    last = failing.history.last()
    assert last is not None and last.classification is not None
    assert last.classification.outcome is Outcome.NETWORK_ERROR
    assert last.attempts[0].error_kind == "connect"


def test_sse_pass_through() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        message = {"jsonrpc": "2.0", "id": 5, "result": {"content": [], "isError": True}}
        body = f"event: message\ndata: {json.dumps(message)}\n\n".encode()
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    transport = RetryTransport(httpx2.MockTransport(handler))
    with httpx2.Client(transport=transport) as client:
        response = client.post(URL, json=CALL)
    assert b'"isError": true' in response.content
    record = get_record(response)
    assert record is not None and record.classification is not None
    assert record.classification.outcome is Outcome.TOOL_ERROR


def test_oversized_body_raises_the_httpx2_exception() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json={"jsonrpc": "2.0", "id": 5, "result": {"x": "y" * 500}})

    transport = RetryTransport(httpx2.MockTransport(handler), max_event_bytes=100)
    with httpx2.Client(transport=transport) as client, pytest.raises(BodyTooLarge) as caught:
        client.post(URL, json=CALL)
    assert isinstance(caught.value, httpx2.ReadError)
    record = get_record(caught.value)
    assert record is not None and record.attempts[-1].error_kind == "oversized"
