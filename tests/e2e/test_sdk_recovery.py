"""The transport leaves the official mcp 2.x client its own recovery (issue 17).

Each test runs the SDK's client over ``mcp_safe_retry.httpx2.mcp_client`` against a real
SDK server (``MCPServer``) on 127.0.0.1 and checks what the server saw:

- the client enters and exits the inner transport through ours (an in-process ASGI bridge
  that must be entered works);
- a stream the server ends after numbered events (2025-11-25 polling,
  ``close_sse_stream``) is resumed by the SDK: ``POST``, then ``GET`` with
  ``Last-Event-ID``; the tool runs once;
- refused ``server/discover`` requests reach ``Client(mode="auto")`` as the ConnectError
  they are, not as an error the SDK would take for an older server;
- after the client's own ``DELETE`` the server's 404 is handed on, never renewed;
- a 307 (``/mcp`` -> ``/mcp/``) followed by the SDK, or by httpx2, is a hop in the
  records: no failed call, no application re-send.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest
from fastmcp.utilities.asgi_transport import StreamingASGITransport
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings

from mcp_safe_retry import History, Idempotency, RetryPolicy
from mcp_safe_retry.core.attempt_kinds import AttemptKind
from mcp_safe_retry.httpx2 import mcp_client
from mcp_safe_retry.records import Outcome, Reason, RetryOrigin
from tests.serving import Served, bind_loopback, memory_event_store

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
OPEN = TransportSecuritySettings(enable_dns_rebinding_protection=False)  # loopback only
CLIENT = {"name": "e2e", "version": "1"}
FAST = RetryPolicy(initial_backoff=0.01, max_backoff=0.02)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the official client is asyncio-based


def build_server(runs: Counter[str]) -> MCPServer:
    """Tools that count their runs; ``poll`` ends its SSE stream before it answers."""
    server = MCPServer("recovery")

    @server.tool()
    async def poll(ctx: Context, key: str) -> str:
        runs[key] += 1
        # The stream opened with a numbered priming event: the client comes back with
        # Last-Event-ID for the answer.
        await ctx.close_sse_stream()
        await anyio.sleep(0.05)
        return f"done {key}"

    @server.tool()
    async def charge(key: str) -> str:
        runs[key] += 1
        return f"charged {key}"

    return server


@pytest.fixture
def runs() -> Counter[str]:
    return Counter()


@pytest.fixture
def served(runs: Counter[str]) -> Iterator[Served]:
    app = build_server(runs).streamable_http_app(
        streamable_http_path="/mcp/",  # a POST to /mcp is redirected (307) here
        event_store=memory_event_store(),
        retry_interval=50,
        transport_security=OPEN,
    )
    with Served(app) as server:
        yield server


def text_of(result: Any) -> str:
    return str(result.content[0].text)


# -- 1. the inner transport is entered and exited -----------------------------------------


async def test_an_inner_transport_that_must_be_entered_serves_through_ours(
    runs: Counter[str],
) -> None:
    app = build_server(runs).streamable_http_app(transport_security=OPEN)
    history = History()
    async with app.router.lifespan_context(app):
        http = mcp_client(transport=StreamingASGITransport(app), history=history)
        with anyio.fail_after(20):
            async with (
                http,
                Client(streamable_http_client("http://testserver/mcp", http_client=http)) as client,
            ):
                result = await client.call_tool("charge", {"key": "asgi"})
    assert text_of(result) == "charged asgi" and runs == {"asgi": 1}
    assert any(r.tool == "charge" and r.classification.ok for r in history.records())


# -- 2. a resumable stream is the SDK's to resume --------------------------------------------


@pytest.mark.parametrize(
    "policy",
    [
        pytest.param(RetryPolicy(), id="unsafe"),
        pytest.param(RetryPolicy(tools={"poll": Idempotency.READ}), id="read"),
    ],
)
async def test_a_stream_ended_after_numbered_events_is_resumed_by_the_sdk(
    served: Served, runs: Counter[str], policy: RetryPolicy
) -> None:
    history = History()
    http = mcp_client(policy=policy, history=history)
    with anyio.fail_after(20):
        async with (
            http,
            Client(streamable_http_client(served.url(), http_client=http), mode="legacy") as client,
        ):
            result = await client.call_tool("poll", {"key": "p"})
    assert not result.is_error and text_of(result) == "done p"
    assert runs == {"p": 1}  # ran once
    calls = served.requests("tools/call")
    assert [s.method for s in calls] == ["POST"]
    resumed = [s for s in served.seen if s.method == "GET" and s.last_event_id]
    assert len(resumed) == 1 and served.seen.index(resumed[0]) > served.seen.index(calls[0])
    (record,) = [r for r in history.records() if r.tool == "poll"]
    assert [a.kind for a in record.attempts] == [AttemptKind.POST, AttemptKind.RESUME]
    first = record.attempts[0]
    assert first.classification.outcome is Outcome.STREAM_INCOMPLETE
    assert first.decision is not None and first.decision.reason is Reason.RESUMABLE
    assert record.classification is not None and record.classification.ok
    assert record.post_count == 1


# -- 3. discover's failure is the SDK's to see -----------------------------------------------


async def test_refused_discovers_reach_the_sdk_as_the_connect_error(runs: Counter[str]) -> None:
    sock = bind_loopback()  # bound, not listening: every connection is refused
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp/"
    history = History()
    http = mcp_client(policy=FAST, history=history)
    with anyio.fail_after(20):
        async with http:
            with pytest.RaisesGroup(httpx2.ConnectError, flatten_subgroups=True):
                async with Client(streamable_http_client(url, http_client=http), mode="auto"):
                    pytest.fail("entering the Client should have raised")
    (record,) = history.records()  # no initialize: no fallback to 2025-11-25
    assert record.method == "server/discover" and record.post_count == 3
    assert {a.error_kind for a in record.attempts} == {"connect"}
    # Now listening: the next client negotiates the newest version, as it would bare.
    app = build_server(runs).streamable_http_app(
        streamable_http_path="/mcp/", transport_security=OPEN
    )
    with Served(app, sock) as served:
        http = mcp_client(policy=FAST)
        with anyio.fail_after(20):
            async with (
                http,
                Client(streamable_http_client(url, http_client=http), mode="auto") as client,
            ):
                assert client.protocol_version == "2026-07-28"
                await client.call_tool("charge", {"key": "later"})
    assert [s.rpc for s in served.seen if s.rpc][:1] == ["server/discover"]
    assert not served.requests("initialize")


# -- 4. a session the client ended stays ended ---------------------------------------------


async def test_after_the_clients_delete_the_404_is_handed_on(
    served: Served, runs: Counter[str]
) -> None:
    history = History()
    http = mcp_client(history=history)
    with anyio.fail_after(20):
        async with http:
            async with Client(
                streamable_http_client(served.url(), http_client=http), mode="legacy"
            ) as client:
                await client.call_tool("charge", {"key": "d"})
                version = client.protocol_version
            (deleted,) = [s for s in served.seen if s.method == "DELETE"]
            assert deleted.session is not None and deleted.status == 200
            # A request still carrying the ended session: the server's 404, unchanged.
            response = await http.post(
                served.url(),
                json={
                    "jsonrpc": "2.0",
                    "id": 9,
                    "method": "tools/call",
                    "params": {"name": "charge", "arguments": {"key": "d"}},
                },
                headers={
                    "accept": "application/json, text/event-stream",
                    "mcp-session-id": deleted.session,
                    "mcp-protocol-version": version,
                },
            )
    assert response.status_code == 404
    assert len(served.requests("initialize")) == 1  # no renewal
    assert runs == {"d": 1}  # the call after the DELETE was not re-sent anywhere
    last = history.records()[-1]
    assert last.http_statuses == (404,) and last.post_count == 1
    assert last.attempts[0].decision is not None
    assert last.attempts[0].decision.reason is Reason.NOT_RETRYABLE


# -- 8. a redirect is a hop ------------------------------------------------------------------


def _no_failures_nor_resends(history: History) -> None:
    for record in history.records():
        assert record.retry_origin is RetryOrigin.NONE, record.to_dict()
        assert record.classification is not None
        outcome = record.classification.outcome
        assert outcome is Outcome.REDIRECT or record.classification.ok, record.to_dict()


async def test_a_redirect_the_sdk_follows_is_a_hop(served: Served, runs: Counter[str]) -> None:
    history = History()
    http = mcp_client(history=history, follow_redirects=False)  # the SDK follows by itself
    with anyio.fail_after(20):
        async with (
            http,
            Client(streamable_http_client(served.url("/mcp"), http_client=http)) as client,
        ):
            result = await client.call_tool("charge", {"key": "r"})
    assert text_of(result) == "charged r" and runs == {"r": 1}
    hops = [r for r in history.records() if r.classification.outcome is Outcome.REDIRECT]
    assert hops and all(r.http_statuses == (307,) for r in hops)
    assert all(r.attempts[-1].decision.reason is Reason.REDIRECT for r in hops)
    assert [s.status for s in served.seen if s.path == "/mcp"] == [307] * len(hops)
    _no_failures_nor_resends(history)
    (call,) = [r for r in history.records() if r.tool == "charge" and r.classification.ok]
    assert call.retry_origin is RetryOrigin.NONE


async def test_a_redirect_httpx2_follows_is_a_hop(served: Served) -> None:
    history = History()
    http = mcp_client(history=history, follow_redirects=True)
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT}
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
    headers = {"accept": "application/json, text/event-stream"}
    with anyio.fail_after(20):
        async with http:
            first = await http.post(served.url("/mcp"), json=body, headers=headers)
            again = await http.post(served.url("/mcp"), json=body, headers=headers)
    assert first.status_code == again.status_code == 200
    assert [s.status for s in served.seen] == [307, 200, 307, 200]
    outcomes = [r.classification.outcome for r in history.records()]
    assert outcomes == [Outcome.REDIRECT, Outcome.RPC_SUCCESS] * 2
    _no_failures_nor_resends(history)
