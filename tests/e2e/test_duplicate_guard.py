"""The duplicate guard end to end: the official mcp 2.x client against the kitchen.

The kitchen's ``connection_abort`` with ``"when": "after"`` runs the tool, then drops the
connection before any response: the request was sent, the tool ran, the client saw no
answer. The application then calls the same tool again, as an agent framework's tool retry
would: the guard holds it, so the kitchen runs the tool once.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_safe_retry import DuplicateCallError, History, allow_duplicate
from mcp_safe_retry.httpx2 import mcp_client
from mcp_safe_retry.kitchen import KitchenServer
from mcp_safe_retry.records import CONTAINED_ERROR_CODE, Outcome, RetryOrigin

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

ARGUMENTS = {"key": "k", "amount": 5}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the official client is asyncio-based


@pytest.fixture(params=["2026", "2025"], scope="module")
def kitchen(request: pytest.FixtureRequest) -> Iterator[KitchenServer]:
    with KitchenServer(legacy_only=request.param == "2025") as server:
        yield server


@asynccontextmanager
async def connected(url: str, http: httpx2.AsyncClient) -> AsyncIterator[Client]:
    with anyio.fail_after(20):
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client


def charges(history: History) -> list[Any]:
    return [r for r in history.records() if r.method == "tools/call" and r.tool == "charge"]


async def test_the_resend_of_a_charge_that_ran_is_held(kitchen: KitchenServer) -> None:
    history = History()
    url = kitchen.url_for("connection_abort", {"when": "after", "tool": "charge"})
    async with mcp_client(history=history) as http, connected(url, http) as client:
        with pytest.raises(MCPError) as dropped:
            await client.call_tool("charge", ARGUMENTS)
        assert dropped.value.code == CONTAINED_ERROR_CODE
        assert dropped.value.data["outcome"] == "NETWORK_ERROR"
        with pytest.raises(MCPError) as held:  # the application calls it again
            await client.call_tool("charge", ARGUMENTS)
    assert kitchen.state_of(url).executions_by_key == {"charge": {"k": 1}}  # it ran once
    error = held.value.error
    assert error.code == CONTAINED_ERROR_CODE and "not sent" in error.message
    assert error.data["outcome"] == "DUPLICATE_HELD"
    assert error.data["duplicateOf"]["delivery"] == "may_have_run"
    first, second = charges(history)
    # The diagnostic JSON shows each attempt's delivery state.
    diagnostic = json.loads(json.dumps([first.to_dict(), second.to_dict()]))
    assert [a["delivery"] for a in diagnostic[0]["attempts"]] == ["may_have_run"]
    assert diagnostic[0]["attempts"][0]["errorKind"] in {"protocol", "read"}
    assert [a["delivery"] for a in diagnostic[1]["attempts"]] == ["not_sent"]
    assert diagnostic[1]["outcome"] == "DUPLICATE_HELD" and diagnostic[1]["postCount"] == 0
    assert diagnostic[1]["retryOrigin"] == "application"
    assert diagnostic[1]["duplicateOf"]["requestId"] == first.request_id
    assert diagnostic[1]["duplicateOf"]["verdict"] == "held"


async def test_consent_sends_it_through_the_official_client(kitchen: KitchenServer) -> None:
    """mcp 2.x sends each request in its caller's context: ``allow_duplicate()`` around
    ``call_tool`` reaches the transport."""
    history = History()
    url = kitchen.url_for("connection_abort", {"when": "after", "tool": "charge"})
    async with mcp_client(history=history) as http, connected(url, http) as client:
        with pytest.raises(MCPError):
            await client.call_tool("charge", ARGUMENTS)
        with allow_duplicate():
            again = await client.call_tool("charge", ARGUMENTS)
        assert not again.is_error  # the kitchen drops the first charge only
        after = await client.call_tool("charge", ARGUMENTS)  # answered: the hold is over
    assert not after.is_error
    assert kitchen.state_of(url).executions_by_key == {"charge": {"k": 3}}
    first, allowed, last = charges(history)
    assert first.outcome == Outcome.NETWORK_ERROR
    assert allowed.outcome == Outcome.TOOL_SUCCESS and allowed.duplicate_of is not None
    assert allowed.duplicate_of.verdict == "allowed"
    assert allowed.retry_origin is RetryOrigin.APPLICATION
    assert last.duplicate_of is None


async def test_a_reconnected_client_is_held_too(kitchen: KitchenServer) -> None:
    """Without containment the drop tears the client down; the application connects again
    (a new session, on a 2025 server) over the same HTTP client and calls the tool again:
    the same charge, held."""
    history = History()
    url = kitchen.url_for("connection_abort", {"when": "after", "tool": "charge"})
    async with mcp_client(history=history, contain_failures=False) as http:
        with pytest.raises(BaseExceptionGroup) as torn:
            async with connected(url, http) as client:
                await client.call_tool("charge", ARGUMENTS)
        assert torn.group_contains(httpx2.RemoteProtocolError, depth=None) or (
            torn.group_contains(httpx2.ReadError, depth=None)
        )
        with pytest.raises(BaseExceptionGroup) as held:
            async with connected(url, http) as client:
                await client.call_tool("charge", ARGUMENTS)
    assert held.group_contains(DuplicateCallError, depth=None)
    assert kitchen.state_of(url).executions_by_key == {"charge": {"k": 1}}
    first, second = charges(history)
    assert second.outcome == Outcome.DUPLICATE_HELD and second.post_count == 0
    if first.session_id is not None:  # 2025-11-25: the re-send came in another session
        assert second.session_id != first.session_id
