"""2026-07-28 routing headers on re-sent requests, end to end: the official mcp 2.x client
over our transport against the kitchen, whose server checks `Mcp-Method` and `Mcp-Name`
against the body (400 with -32020 on a mismatch)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_safe_retry import History, Idempotency, RetryPolicy
from mcp_safe_retry.httpx2 import mcp_client
from mcp_safe_retry.kitchen import KitchenServer

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
MODERN = "2026-07-28"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the official client is asyncio-based


@pytest.fixture(scope="module")
def kitchen() -> Iterator[KitchenServer]:
    with KitchenServer() as server:
        yield server


class Recorder(httpx2.AsyncBaseTransport):
    """The inner transport: sends for real and keeps every request it was given."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.sent: list[httpx2.Request] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.sent.append(request)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_the_server_checks_the_headers_we_keep(kitchen: KitchenServer) -> None:
    # The control: this server does reject a request whose Mcp-Name disagrees with its body.
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "lookup",
            "arguments": {"key": "a"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "charge",
    }
    async with httpx2.AsyncClient() as http:
        response = await http.post(kitchen.url_for("baseline"), json=body, headers=headers)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32020


async def test_a_read_retried_after_503_keeps_mcp_method_and_name(
    kitchen: KitchenServer,
) -> None:
    history = History()
    recorder = Recorder()
    policy = RetryPolicy(tools={"lookup": Idempotency.READ}, initial_backoff=0.001)
    codes = {"statusCodes": [503, 200], "method": "tools/call"}
    url = kitchen.url_for("errors.http_status_sequence", codes)
    http = mcp_client(policy=policy, history=history, transport=recorder)
    with anyio.fail_after(20):
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            result = await client.call_tool("lookup", {"key": "a"})
            assert client.protocol_version == MODERN
    assert not result.is_error  # a mismatch would have been a 400 with -32020
    posts: list[tuple[Any, Any]] = [
        (r.headers, json.loads(r.content))
        for r in recorder.sent
        if r.method == "POST" and json.loads(r.content).get("method") == "tools/call"
    ]
    assert len(posts) == 2
    (first_headers, first), (again_headers, again) = posts
    assert again["id"] != first["id"]
    for headers, sent in posts:
        assert headers["mcp-method"] == sent["method"] == "tools/call"
        assert headers["mcp-name"] == sent["params"]["name"] == "lookup"
        assert headers["mcp-protocol-version"] == MODERN
    ignored = {"content-length"}
    assert [(k, v) for k, v in again_headers.multi_items() if k not in ignored] == [
        (k, v) for k, v in first_headers.multi_items() if k not in ignored
    ]
    (record,) = [r for r in history.records() if r.method == "tools/call"]
    assert record.http_statuses == (503, 200)
    assert kitchen.state_of(url).executions == {"lookup": 1}
