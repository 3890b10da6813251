"""The official mcp 2.x client over `mcp_safe_retry.httpx2.mcp_client`, against the kitchen."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_safe_retry import History, Idempotency, RetryPolicy
from mcp_safe_retry.httpx2 import mcp_client
from mcp_safe_retry.kitchen import KitchenServer
from mcp_safe_retry.records import Outcome, RetryOrigin

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the official client is asyncio-based


@pytest.fixture(params=["2026", "2025"], scope="module")
def kitchen(request: pytest.FixtureRequest) -> Iterator[KitchenServer]:
    with KitchenServer(legacy_only=request.param == "2025") as server:
        yield server


@asynccontextmanager
async def session(url: str, policy: RetryPolicy, history: History) -> AsyncIterator[Client]:
    async def approve(context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"approve": True})

    http = mcp_client(policy=policy, history=history, headers={"X-Trace": "e2e"})
    with anyio.fail_after(20):
        async with (
            http,
            Client(
                streamable_http_client(url, http_client=http), elicitation_callback=approve
            ) as client,
        ):
            yield client


def calls(history: History, tool: str) -> list[Any]:
    return [r for r in history.records() if r.method == "tools/call" and r.tool == tool]


async def test_records_know_the_client_and_the_protocol(kitchen: KitchenServer) -> None:
    history = History()
    policy = RetryPolicy(tools={"lookup": Idempotency.READ})
    async with session(kitchen.url_for("baseline"), policy, history) as client:
        result = await client.call_tool("lookup", {"key": "a"})
        version = client.protocol_version
    assert not result.is_error
    (record,) = calls(history, "lookup")
    diagnostic = record.to_dict()
    assert diagnostic["outcome"] == "TOOL_SUCCESS" and diagnostic["retryOrigin"] == "none"
    assert diagnostic["protocolVersion"] == version
    if version == "2025-11-25":
        assert record.session_id is not None and diagnostic["client"].startswith("mcp")


async def test_trusted_read_only_annotations(kitchen: KitchenServer) -> None:
    history = History()
    url = kitchen.url_for("rate_limit", {"retryAfter": 0, "method": "tools/call", "times": 2})
    async with session(url, RetryPolicy(trust_annotations=True), history) as client:
        await client.list_tools()  # the transport reads the annotations passing through
        with pytest.raises(MCPError):  # the 429 is the answer: charge is UNSAFE
            await client.call_tool("charge", {"key": "c", "amount": 1})
        looked_up = await client.call_tool("lookup", {"key": "a"})
    assert not looked_up.is_error
    assert calls(history, "lookup")[0].http_statuses == (429, 200)
    assert calls(history, "charge")[0].http_statuses == (429,)
    assert kitchen.state_of(url).executions == {"lookup": 1}


async def test_input_required_is_neither_error_nor_retry(kitchen: KitchenServer) -> None:
    history = History()
    url = kitchen.url_for("elicitation.approval")
    async with session(url, RetryPolicy(), history) as client:
        result = await client.call_tool("approve", {"action": "deploy", "key": "d"})
        version = client.protocol_version
    assert not result.is_error
    records = calls(history, "approve")
    if version == "2026-07-28":
        outcomes = [r.classification.outcome for r in records]
        assert outcomes == [Outcome.INPUT_REQUIRED, Outcome.TOOL_SUCCESS]
        assert [r.retry_origin for r in records] == [RetryOrigin.NONE, RetryOrigin.NONE]
        assert records[0].request_id != records[1].request_id
    else:  # 2025-11-25: the elicitation rides the call's SSE stream
        assert [r.classification.outcome for r in records] == [Outcome.TOOL_SUCCESS]
    assert kitchen.state_of(url).executions == {"approve": 1}


async def test_application_resend_is_detected(kitchen: KitchenServer) -> None:
    history = History()
    url = kitchen.url_for("errors.tool_error", {"tool": "charge"})
    async with session(url, RetryPolicy(), history) as client:
        first = await client.call_tool("charge", {"key": "r", "amount": 2})
        second = await client.call_tool("charge", {"key": "r", "amount": 2})
    assert first.is_error and not second.is_error
    origins = [r.retry_origin for r in calls(history, "charge")]
    assert origins == [RetryOrigin.NONE, RetryOrigin.APPLICATION]
    assert kitchen.state_of(url).executions == {"charge": 1}
