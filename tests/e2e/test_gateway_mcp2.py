"""The official mcp 2.x client, bare (its own HTTP client, nothing of ours in it), calling the
kitchen through the gateway, in both protocol eras, and over the legacy HTTP+SSE transport:
the gateway gives it what the retry transport gives an in-process client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError

from mcp_safe_retry import Idempotency, RetryPolicy
from mcp_safe_retry.kitchen import KitchenServer
from mcp_safe_retry.records import CONTAINED_ERROR_CODE, CallRecord, Outcome, RetryOrigin
from tests.gateway_support import served_gateway
from tests.serving import Served

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

POLICY = RetryPolicy(tools={"lookup": Idempotency.READ}, initial_backoff=0.01)
CHARGE = {"key": "k", "amount": 5}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the official client is asyncio-based


@pytest.fixture(params=["2026", "2025"], scope="module")
def kitchen(request: pytest.FixtureRequest) -> Iterator[KitchenServer]:
    with KitchenServer(legacy_only=request.param == "2025") as server:
        yield server


@pytest.fixture(scope="module")
def gateway(kitchen: KitchenServer) -> Iterator[tuple[Any, str]]:
    with served_gateway(kitchen.url, policy=POLICY) as served:
        yield served


def through(gateway: tuple[Any, str], kitchen_url: str) -> str:
    """The gateway's URL for a kitchen run (the run's query passed on)."""
    return f"{gateway[1]}?{kitchen_url.partition('?')[2]}"


@asynccontextmanager
async def bare_client(url: str) -> AsyncIterator[Client]:
    with anyio.fail_after(30):
        async with Client(streamable_http_client(url)) as client:
            yield client


def records(gateway: tuple[Any, str], tool: str, since: int) -> list[CallRecord]:
    found = gateway[0].history.records()[since:]
    return [r for r in found if r.method == "tools/call" and r.tool == tool]


async def test_a_read_that_meets_503_is_retried_and_runs_once(
    kitchen: KitchenServer, gateway: tuple[Any, str]
) -> None:
    since = len(gateway[0].history.records())
    codes = {"statusCodes": [503, 200], "method": "tools/call"}
    url = kitchen.url_for("errors.http_status_sequence", codes)
    async with bare_client(through(gateway, url)) as client:
        result = await client.call_tool("lookup", {"key": "a"})
    assert not result.is_error
    state = kitchen.state_of(url)
    assert state.executions == {"lookup": 1}
    assert [p.status for p in state.posts if p.tool == "lookup"] == [503, 200]
    (record,) = records(gateway, "lookup", since)
    assert record.outcome == Outcome.TOOL_SUCCESS and record.http_statuses == (503, 200)
    assert [a.retry_origin for a in record.attempts] == [RetryOrigin.NONE, RetryOrigin.SDK]


async def test_an_unsafe_call_that_meets_503_is_sent_once(
    kitchen: KitchenServer, gateway: tuple[Any, str]
) -> None:
    since = len(gateway[0].history.records())
    codes = {"statusCodes": [503, 200], "tool": "charge"}
    url = kitchen.url_for("errors.http_status_sequence", codes)
    async with bare_client(through(gateway, url)) as client:
        with pytest.raises(MCPError) as failed:
            await client.call_tool("charge", CHARGE)
    # The contained error the in-process transport gives, for this call only.
    assert failed.value.code == CONTAINED_ERROR_CODE
    assert failed.value.data["source"] == "mcp-safe-retry"
    assert failed.value.data["outcome"] == "HTTP_ERROR"
    assert failed.value.data["reason"] == "not_idempotent"
    state = kitchen.state_of(url)
    assert [p.status for p in state.posts if p.tool == "charge"] == [503]
    assert state.executions.get("charge", 0) == 0
    (record,) = records(gateway, "charge", since)
    assert record.post_count == 1 and record.http_statuses == (503,)


async def test_a_resend_after_a_drop_is_held_and_the_tool_runs_once(
    kitchen: KitchenServer, gateway: tuple[Any, str]
) -> None:
    since = len(gateway[0].history.records())
    url = kitchen.url_for("connection_abort", {"when": "after", "tool": "charge"})
    async with bare_client(through(gateway, url)) as client:
        with pytest.raises(MCPError) as dropped:
            await client.call_tool("charge", CHARGE)
        assert dropped.value.data["outcome"] == "NETWORK_ERROR"
        with pytest.raises(MCPError) as held:  # the client calls it again
            await client.call_tool("charge", CHARGE)
    assert kitchen.state_of(url).executions_by_key == {"charge": {"k": 1}}
    assert held.value.code == CONTAINED_ERROR_CODE
    assert held.value.data["outcome"] == "DUPLICATE_HELD"
    assert held.value.data["duplicateOf"]["delivery"] == "may_have_run"
    first, second = records(gateway, "charge", since)
    assert first.outcome == Outcome.NETWORK_ERROR
    assert second.outcome == Outcome.DUPLICATE_HELD and second.post_count == 0
    assert second.to_dict()["duplicateOf"]["requestId"] == first.request_id


async def test_each_client_credential_is_kept_apart(
    kitchen: KitchenServer, gateway: tuple[Any, str]
) -> None:
    """Alice's re-send is held; Bob's same call, with his own credential, goes and runs."""
    url = kitchen.url_for("connection_abort", {"when": "after", "tool": "charge", "times": 1})
    alice = {"Authorization": "Bearer alice-secret"}
    bob = {"Authorization": "Bearer bob-secret"}
    import httpx2

    async def call(headers: dict[str, str]) -> Any:
        http = httpx2.AsyncClient(headers=headers, timeout=30)
        async with (
            http,
            Client(streamable_http_client(through(gateway, url), http_client=http)) as client,
        ):
            try:
                return await client.call_tool("charge", CHARGE)
            except MCPError as exc:
                return exc

    with anyio.fail_after(60):
        assert (await call(alice)).data["outcome"] == "NETWORK_ERROR"
        assert (await call(alice)).data["outcome"] == "DUPLICATE_HELD"
        result = await call(bob)
    assert not isinstance(result, MCPError) and not result.is_error
    assert kitchen.state_of(url).executions_by_key == {"charge": {"k": 2}}  # Alice's, Bob's


async def test_the_legacy_http_sse_transport_is_pointed_back_at_the_gateway() -> None:
    """The SDK's own legacy server: the ``endpoint`` event names the gateway's path, the
    client POSTs there, the answers come on the stream through the gateway."""
    server = MCPServer("legacy")

    @server.tool()
    async def lookup(key: str) -> str:
        return f"found {key}"

    open_hosts = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    with (
        Served(server.sse_app(transport_security=open_hosts)) as upstream,
        served_gateway(upstream.url("/sse"), policy=POLICY) as (gateway, url),
    ):
        with anyio.fail_after(30):
            async with Client(sse_client(url)) as client:
                result = await client.call_tool("lookup", {"key": "a"})
        assert not result.is_error
        assert "found a" in str(result.content)
        assert "/messages/" in gateway.paths  # the path the endpoint event named
        calls = [r for r in gateway.history.records() if r.method == "tools/call"]
        assert len(calls) == 1 and calls[0].tool == "lookup"
        assert [s.path for s in upstream.requests("tools/call")] == ["/messages/"]


async def test_a_session_the_server_dropped_is_renewed_underneath_the_client() -> None:
    """2025 era: the kitchen ends the session after one call; the gateway's transport
    renews it (a new initialize) and re-sends, so the bare client never sees the 404."""
    with (
        KitchenServer(legacy_only=True) as kitchen,
        served_gateway(kitchen.url, policy=POLICY) as served,
    ):
        url = kitchen.url_for("session_dropped", {"afterCalls": 1})
        async with bare_client(through(served, url)) as client:
            results = [await client.call_tool("charge", {"key": f"c{i}", "amount": 1})
                       for i in range(3)]  # fmt: skip
        assert not any(r.is_error for r in results)
        state = kitchen.state_of(url)
        assert state.executions == {"charge": 3}  # each call ran exactly once
        assert [p.method for p in state.posts].count("initialize") == 2  # one renewal
        renewed = [r for r in served[0].history.records() if r.http_statuses[:1] == (404,)]
        assert renewed and renewed[0].to_dict()["attempts"][1]["kind"] == "reinitialise"


async def test_a_slow_read_is_hedged_through_the_gateway() -> None:
    """A policy with ``hedge_after``: the gateway's async transport hedges a READ the
    kitchen holds for 2 s (seed 2: the first POST slow, the second not)."""
    policy = RetryPolicy(tools={"lookup": Idempotency.READ}, hedge_after=0.05)
    with KitchenServer() as kitchen, served_gateway(kitchen.url, policy=policy) as served:
        url = kitchen.url_for("latency.slow_tail", {"slowMs": 2000, "seed": 2})
        async with bare_client(through(served, url)) as client:
            start = anyio.current_time()
            result = await client.call_tool("lookup", {"key": "k"})
            took = anyio.current_time() - start
    assert not result.is_error and took < 1.5
    (record,) = [r for r in served[0].history.records() if r.method == "tools/call"]
    assert [(str(a.kind), a.fate) for a in record.attempts] == [("post", "lost"), ("hedge", "won")]
