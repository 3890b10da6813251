"""The HTTP+SSE transport (2024-11-05) end to end: a failure the transport contains for a
POST reaches the official mcp 2.x ``sse_client`` on the event stream it reads.

That transport answers every POST ``202 Accepted`` and sends responses as ``message``
events on the GET stream; ``sse_client`` never reads a POST's body, and its POST writer stops
for good at an exception. Before, a contained failure (the circuit held open, a dropped
connection, a duplicate held, an HTTP error) went into the body of a POST nobody read, and
``call_tool`` waited forever. Now it is put on the event stream as a JSON-RPC error event for
that request's id, and ``call_tool`` raises it at once. Against mcp 2.3's own legacy server
(``MCPServer.sse_app()``) under uvicorn on 127.0.0.1, through its own ``sse_client``.
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.sse import sse_client
from mcp.server import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError

from mcp_safe_retry import CircuitBreaker, History, Idempotency, RetryPolicy
from mcp_safe_retry.httpx2 import mcp_client
from mcp_safe_retry.kitchen import AbortableH11Protocol, KitchenServer
from mcp_safe_retry.records import CONTAINED_ERROR_CODE, Outcome
from tests.serving import FaultyPosts, Served

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
OPEN = TransportSecuritySettings(enable_dns_rebinding_protection=False)  # loopback only
QUICK = 5.0  # seconds: the contained error arrives at once, far within any call timeout


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the official client is asyncio-based


def legacy_server(runs: Counter[str]) -> MCPServer:
    server = MCPServer("legacy")

    @server.tool()
    async def charge(key: str) -> str:  # UNSAFE: no policy names it
        runs[key] += 1
        return f"charged {key}"

    @server.tool()
    async def lookup(key: str) -> str:
        runs[f"lookup {key}"] += 1
        return f"found {key}"

    return server


async def test_a_circuit_held_open_ends_the_call_at_once() -> None:
    runs: Counter[str] = Counter()
    history = History()
    breaker = CircuitBreaker(failure_threshold=1)
    policy = RetryPolicy(tools={"lookup": Idempotency.READ})
    factory = functools.partial(mcp_client, history=history, breaker=breaker, policy=policy)
    with Served(legacy_server(runs).sse_app(transport_security=OPEN)) as served:
        with anyio.fail_after(30):
            async with Client(
                sse_client(served.url("/sse"), httpx_client_factory=factory)
            ) as client:
                await client.list_tools()
                posts = [r for r in history.records() if r.method == "tools/list"]
                endpoint_key = served.url("/messages/")
                assert posts, "the session's POSTs went through the transport"
                breaker.record(endpoint_key, failed=True)  # the server's circuit opens
                started = time.monotonic()
                with pytest.raises(MCPError) as held:
                    await client.call_tool("charge", {"key": "k"})
                elapsed = time.monotonic() - started
                # The session goes on: a read right after the server's answer passes.
                found = await client.call_tool("lookup", {"key": "x"})
    assert elapsed < QUICK
    assert held.value.error.code == CONTAINED_ERROR_CODE
    assert held.value.error.data["outcome"] == "CIRCUIT_OPEN"
    assert runs == {"lookup x": 1}  # charge was never sent; lookup followed an answer
    assert not found.is_error
    (charge,) = [r for r in history.records() if r.tool == "charge"]
    assert charge.outcome == Outcome.CIRCUIT_OPEN and charge.post_count == 0


@pytest.mark.parametrize("fault", [503, "drop"])
async def test_a_failed_post_is_answered_on_the_event_stream(fault: Any) -> None:
    runs: Counter[str] = Counter()
    history = History()
    factory = functools.partial(mcp_client, history=history)
    app = FaultyPosts(legacy_server(runs).sse_app(transport_security=OPEN), {"charge": fault})
    with Served(app, http=AbortableH11Protocol) as served:
        with anyio.fail_after(30):
            async with Client(
                sse_client(served.url("/sse"), httpx_client_factory=factory)
            ) as client:
                started = time.monotonic()
                with pytest.raises(MCPError) as failed:
                    await client.call_tool("charge", {"key": "k"})
                elapsed = time.monotonic() - started
                again: Any = None
                try:  # the application re-sends it
                    await client.call_tool("charge", {"key": "k"})
                except MCPError as exc:
                    again = exc
                other = await client.call_tool("charge", {"key": "other"})  # the session goes on
    assert elapsed < QUICK
    error = failed.value.error
    assert error.code == CONTAINED_ERROR_CODE and error.data["source"] == "mcp-safe-retry"
    if fault == "drop":
        assert error.data["outcome"] == "NETWORK_ERROR"
        # It may have run: the same call again is held, and said so on the stream too.
        assert again is not None and again.error.data["outcome"] == "DUPLICATE_HELD"
        assert runs == {"other": 1}
    else:
        assert error.data["outcome"] == "HTTP_ERROR"  # a 503 says it did not run...
        assert again is None and runs == {"k": 1, "other": 1}  # ...so the re-send runs
    assert not other.is_error


async def test_a_read_meeting_a_503_is_retried_and_nothing_else_changes() -> None:
    runs: Counter[str] = Counter()
    history = History()
    policy = RetryPolicy(tools={"lookup": Idempotency.READ}, initial_backoff=0.01)
    factory = functools.partial(mcp_client, history=history, policy=policy)
    app = FaultyPosts(legacy_server(runs).sse_app(transport_security=OPEN), {"lookup": 503})
    with Served(app, http=AbortableH11Protocol) as served:
        with anyio.fail_after(30):
            async with Client(
                sse_client(served.url("/sse"), httpx_client_factory=factory)
            ) as client:
                found = await client.call_tool("lookup", {"key": "a"})
                charged = await client.call_tool("charge", {"key": "b"})
    assert not found.is_error and not charged.is_error
    assert runs == {"lookup a": 1, "b": 1}
    (lookup,) = [r for r in history.records() if r.tool == "lookup"]
    assert lookup.http_statuses == (503, 202)


async def test_the_kitchens_legacy_transport_a_dropped_post() -> None:
    """The kitchen's HTTP+SSE transport: the ``charge`` POST's connection drops once its
    request is read (``"when": "before"``: over this transport the server's 202 goes out at
    once, so a drop "after" may find the POST answered). The contained error comes on the
    stream at once; the application's re-send is held (the transport cannot tell it did not
    run) and said so on the stream."""
    history = History()
    factory = functools.partial(mcp_client, history=history)
    with KitchenServer() as kitchen:
        url = kitchen.sse_url_for("connection_abort", {"when": "before", "tool": "charge"})
        with anyio.fail_after(30):
            async with Client(sse_client(url, httpx_client_factory=factory)) as client:
                started = time.monotonic()
                with pytest.raises(MCPError) as dropped:
                    await client.call_tool("charge", {"key": "k", "amount": 1})
                elapsed = time.monotonic() - started
                with pytest.raises(MCPError) as held:
                    await client.call_tool("charge", {"key": "k", "amount": 1})
        executions = kitchen.state_of(url).executions_by_key
    assert elapsed < QUICK
    assert dropped.value.error.data["outcome"] == "NETWORK_ERROR"
    assert held.value.error.data["outcome"] == "DUPLICATE_HELD"
    assert executions == {}  # dropped before the server had it; the re-send never sent
