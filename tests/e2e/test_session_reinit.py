"""A session the server dropped between two calls (2025 era), with the official mcp 2.x client.

The spec: a server that ended a session answers 404 to requests carrying its
`Mcp-Session-Id`, and the client MUST start a new session with `initialize`. The official
client does not, so today the next call fails with "Session not found". The transport is
to re-initialise once and re-send the call (issue 13, section 2); until it does, this test
is an expected failure that must fail (strict), so the change that fixes it flips it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_safe_retry import History, Idempotency, RetryPolicy
from mcp_safe_retry.httpx2 import mcp_client
from mcp_safe_retry_kitchen import KitchenServer

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
CALLS = [
    pytest.param("lookup", {"key": "a"}, id="read"),
    pytest.param("charge", {"key": "c", "amount": 1}, id="unsafe"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the official client is asyncio-based


@pytest.fixture(scope="module")
def kitchen() -> Iterator[KitchenServer]:
    with KitchenServer(legacy_only=True) as server:  # sessions: the 2025 era
        yield server


@pytest.mark.xfail(raises=MCPError, strict=True, reason="session re-init: issue 13 section 2")
@pytest.mark.parametrize(("tool", "arguments"), CALLS)
async def test_a_dropped_session_is_reinitialised_and_the_call_runs_once(
    kitchen: KitchenServer, tool: str, arguments: dict[str, Any]
) -> None:
    history = History()
    policy = RetryPolicy(tools={"lookup": Idempotency.READ})
    url = kitchen.url_for("session_dropped", {"afterCalls": 1})
    http = mcp_client(policy=policy, history=history)
    outcomes: list[Any] = []
    with anyio.fail_after(20):
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            for _ in range(3):  # the server drops the session after the first call
                try:
                    outcomes.append(await client.call_tool(tool, arguments))
                except MCPError as exc:
                    outcomes.append(exc)
    errors = [o for o in outcomes if isinstance(o, MCPError)]
    if errors:
        assert "Session not found" in str(errors[0])  # today: the 404 reaches the caller
        raise errors[0]
    assert not any(result.is_error for result in outcomes)
    state = kitchen.state_of(url)
    assert state.executions == {tool: 3}  # each call ran exactly once
    assert [p.method for p in state.posts].count("initialize") == 2  # one re-initialise
