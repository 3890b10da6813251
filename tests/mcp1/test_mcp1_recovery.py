"""The transport leaves the official mcp 1.x client (httpx) its own recovery (issue 17).

The client runs over ``mcp_safe_retry.mcp_client`` against an mcp 1.x server (``FastMCP``)
served by uvicorn on 127.0.0.1 in this same environment:

- a stream the server ends after numbered events (``close_sse_stream``) is resumed by the
  SDK: ``POST``, then ``GET`` with ``Last-Event-ID``; the tool runs once;
- after the client's own ``DELETE`` the server's 404 is handed on, never renewed;
- a 307 (``/mcp`` -> ``/mcp/``) the SDK follows by itself is a hop in the records;
- a refused ``initialize`` reaches the SDK as the ConnectError it is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.transport_security import TransportSecuritySettings

from mcp_safe_retry import History, Idempotency, RetryPolicy, mcp_client
from mcp_safe_retry.core.attempt_kinds import AttemptKind
from mcp_safe_retry.records import Outcome, Reason, RetryOrigin
from tests.serving import Served, bind_loopback, memory_event_store

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
OPEN = TransportSecuritySettings(enable_dns_rebinding_protection=False)  # loopback only


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def runs() -> Counter[str]:
    return Counter()


@pytest.fixture
def served(runs: Counter[str]) -> Iterator[Served]:
    server = FastMCP(
        "recovery",
        event_store=memory_event_store(),
        retry_interval=50,
        streamable_http_path="/mcp/",  # a POST to /mcp is redirected (307) here
        transport_security=OPEN,
    )

    @server.tool()
    async def poll(ctx: Context, key: str) -> str:  # type: ignore[type-arg]
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

    with Served(server.streamable_http_app()) as running:
        yield running


def text_of(result: Any) -> str:
    return str(result.content[0].text)


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
    with anyio.fail_after(20):
        async with (
            mcp_client(policy=policy, history=history) as http,
            streamable_http_client(served.url(), http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("poll", {"key": "p"})
    assert not result.isError and text_of(result) == "done p"
    assert runs == {"p": 1}  # ran once
    calls = served.requests("tools/call")
    assert [s.method for s in calls] == ["POST"]
    resumed = [s for s in served.seen if s.method == "GET" and s.last_event_id]
    assert len(resumed) == 1 and served.seen.index(resumed[0]) > served.seen.index(calls[0])
    (record,) = [r for r in history.records() if r.tool == "poll"]
    assert [a.kind for a in record.attempts] == [AttemptKind.POST, AttemptKind.RESUME]
    first = record.attempts[0]
    assert first.decision is not None and first.decision.reason is Reason.RESUMABLE
    assert record.classification is not None and record.classification.ok


async def test_after_the_clients_delete_the_404_is_handed_on(
    served: Served, runs: Counter[str]
) -> None:
    history = History()
    with anyio.fail_after(20):
        async with mcp_client(history=history) as http:
            async with (
                streamable_http_client(served.url(), http_client=http) as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await session.call_tool("charge", {"key": "d"})
            (deleted,) = [s for s in served.seen if s.method == "DELETE"]
            assert deleted.session is not None and deleted.status == 200
            call = {"name": "charge", "arguments": {"key": "d"}}
            response = await http.post(
                served.url(),
                json={"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": call},
                headers={
                    "accept": "application/json, text/event-stream",
                    "mcp-session-id": deleted.session,
                    "mcp-protocol-version": "2025-11-25",
                },
            )
    assert response.status_code == 404
    assert len(served.requests("initialize")) == 1  # no renewal
    assert runs == {"d": 1}
    last = history.records()[-1]
    assert last.http_statuses == (404,) and last.post_count == 1


async def test_a_redirect_the_sdk_follows_is_a_hop(served: Served, runs: Counter[str]) -> None:
    history = History()
    with anyio.fail_after(20):
        async with (
            mcp_client(history=history, follow_redirects=False) as http,
            streamable_http_client(served.url("/mcp"), http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("charge", {"key": "r"})
    assert text_of(result) == "charged r" and runs == {"r": 1}
    records = history.records()
    hops = [r for r in records if r.classification.outcome is Outcome.REDIRECT]
    assert hops and all(r.http_statuses == (307,) for r in hops)
    assert all(r.attempts[-1].decision.reason is Reason.REDIRECT for r in hops)
    for record in records:
        assert record.retry_origin is RetryOrigin.NONE, record.to_dict()
        assert record in hops or record.classification.ok, record.to_dict()


async def test_a_refused_initialize_reaches_the_sdk_as_the_connect_error() -> None:
    sock = bind_loopback()  # bound, not listening: every connection is refused
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp/"
    history = History()
    policy = RetryPolicy(initial_backoff=0.01, max_backoff=0.02)
    try:
        with anyio.fail_after(20), pytest.raises(Exception) as raised:
            async with (
                mcp_client(policy=policy, history=history) as http,
                streamable_http_client(url, http_client=http) as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
    finally:
        sock.close()
    errors = [raised.value]
    while isinstance(errors[-1], BaseExceptionGroup):
        errors = [*errors[:-1], *errors[-1].exceptions]
    assert any(isinstance(e, httpx.ConnectError) for e in errors), errors
    (record,) = history.records()
    assert record.method == "initialize" and record.post_count == 3
