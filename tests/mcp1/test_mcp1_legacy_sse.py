"""The HTTP+SSE transport (2024-11-05) end to end with mcp 1.x: a failure the transport
contains for a POST reaches the official mcp 1.30 ``sse_client`` on its event stream.

mcp 1.x's ``sse_client`` reads answers only from the GET stream, and its POST writer stops
for good at the first failed POST (``raise_for_status``, then a logged exception). Before, a
contained failure went into the body of a POST it never read, and ``call_tool`` waited
forever. Against mcp 1.30's own legacy server (``FastMCP.sse_app()``) under uvicorn on
127.0.0.1, in the mcp 1.x environment (scripts/test.sh).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.server.fastmcp import FastMCP
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import McpError

from mcp_safe_retry import CircuitBreaker, History, Idempotency, RetryPolicy, mcp_client
from mcp_safe_retry.records import CONTAINED_ERROR_CODE, Outcome
from tests.serving import FaultyPosts, Served

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
QUICK = 5.0  # seconds: the contained error arrives at once, far within any call timeout
POLICY = RetryPolicy(tools={"lookup": Idempotency.READ}, initial_backoff=0.01)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def legacy_app(runs: Counter[str]) -> Any:
    server = FastMCP(
        "legacy",
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    @server.tool()
    async def charge(key: str) -> str:  # UNSAFE: no policy names it
        runs[key] += 1
        return f"charged {key}"

    @server.tool()
    async def lookup(key: str) -> str:
        runs[f"lookup {key}"] += 1
        return f"found {key}"

    return server.sse_app()


async def test_a_503_to_a_post_is_answered_on_the_event_stream() -> None:
    runs: Counter[str] = Counter()
    history = History()
    app = FaultyPosts(legacy_app(runs), {"charge": 503, "lookup": 503})

    def factory(**kwargs: Any) -> Any:
        return mcp_client(policy=POLICY, history=history, **kwargs)

    with Served(app) as served, anyio.fail_after(30):
        async with (
            sse_client(served.url("/sse"), httpx_client_factory=factory) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            started = time.monotonic()
            with pytest.raises(McpError) as failed:
                await session.call_tool("charge", {"key": "k"})
            elapsed = time.monotonic() - started
            found = await session.call_tool("lookup", {"key": "a"})  # a read: retried
            again = await session.call_tool("charge", {"key": "k"})  # the session goes on
    assert elapsed < QUICK
    assert failed.value.error.code == CONTAINED_ERROR_CODE
    assert failed.value.error.data["outcome"] == "HTTP_ERROR"
    assert not found.isError and not again.isError
    assert runs == {"lookup a": 1, "k": 1}  # the 503 did not run it; the re-send did
    (lookup,) = [r for r in history.records() if r.tool == "lookup"]
    assert lookup.http_statuses == (503, 202)  # its answer came on the stream, id restored


async def test_a_circuit_held_open_ends_the_call_at_once() -> None:
    runs: Counter[str] = Counter()
    history = History()
    breaker = CircuitBreaker(failure_threshold=1)

    def factory(**kwargs: Any) -> Any:
        return mcp_client(policy=POLICY, history=history, breaker=breaker, **kwargs)

    with Served(legacy_app(runs)) as served, anyio.fail_after(30):
        async with (
            sse_client(served.url("/sse"), httpx_client_factory=factory) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.list_tools()
            breaker.record(served.url("/messages/"), failed=True)  # the circuit opens
            started = time.monotonic()
            with pytest.raises(McpError) as held:
                await session.call_tool("charge", {"key": "k"})
            elapsed = time.monotonic() - started
            found = await session.call_tool("lookup", {"key": "x"})  # follows an answer
    assert elapsed < QUICK
    assert held.value.error.code == CONTAINED_ERROR_CODE
    assert held.value.error.data["outcome"] == "CIRCUIT_OPEN"
    assert not found.isError and runs == {"lookup x": 1}
    (charge,) = [r for r in history.records() if r.tool == "charge"]
    assert charge.outcome == Outcome.CIRCUIT_OPEN and charge.post_count == 0
