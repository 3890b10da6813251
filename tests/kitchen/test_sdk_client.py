"""The official mcp 2.3.0 client against the kitchen, in both protocol eras."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from kitchen_wire import StartKitchen
from mcp.client import Client
from mcp.client.session import ClientRequestContext, ElicitationFnT
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_safe_retry.kitchen import KitchenServer

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


@dataclass(frozen=True)
class Era:
    """A kitchen configuration and the protocol version the official client negotiates."""

    config: dict[str, bool]
    version: str


ERAS = [
    # An mcp 2.3.0 server serves 2026-07-28 whatever its flags: the client adopts it.
    pytest.param(Era({"stateless": True, "json_response": True}, "2026-07-28"), id="2026"),
    # A legacy-only kitchen refuses the discover probe as mcp 1.x does: the client falls
    # back to initialize and a 2025-11-25 session with SSE answers.
    pytest.param(Era({"legacy_only": True}, "2025-11-25"), id="2025-session-sse"),
]


@asynccontextmanager
async def connect(
    url: str, elicitation_callback: ElicitationFnT | None = None
) -> AsyncIterator[Client]:
    """An official client on its own httpx2 client, bounded in time."""
    with anyio.fail_after(10):
        async with (
            httpx2.AsyncClient(timeout=5) as http,
            Client(
                streamable_http_client(url, http_client=http),
                elicitation_callback=elicitation_callback,
                read_timeout_seconds=5,
            ) as client,
        ):
            yield client


@pytest.fixture(params=ERAS)
def era(request: pytest.FixtureRequest, start_kitchen: StartKitchen) -> tuple[KitchenServer, str]:
    """A kitchen configured for one era, and the protocol version a client negotiates."""
    era: Era = request.param
    return start_kitchen(**era.config), era.version


async def test_baseline(era: tuple[KitchenServer, str]) -> None:
    kitchen, version = era
    async with connect(kitchen.url) as client:
        assert client.protocol_version == version
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        first = await client.call_tool("charge", {"key": "order-1", "amount": 250})
        second = await client.call_tool("charge", {"key": "order-1", "amount": 250})
        looked_up = await client.call_tool("lookup", {"key": "a"})
    assert set(tools) == {"lookup", "charge", "slow", "approve"}
    charge = tools["charge"].annotations
    assert charge is not None
    assert (charge.read_only_hint, charge.idempotent_hint, charge.destructive_hint) == (
        False,
        False,
        False,
    )
    lookup = tools["lookup"].annotations
    assert lookup is not None
    assert (lookup.read_only_hint, lookup.idempotent_hint) == (True, True)
    assert first.structured_content == {
        "key": "order-1",
        "amount": 250,
        "execution": 1,
        "chargeId": "ch_order-1_1",
    }
    assert second.structured_content is not None
    assert second.structured_content["execution"] == 2
    assert looked_up.structured_content == {"key": "a", "value": "ca978112ca1bbdca"}
    assert kitchen.state.executions_by_key == {"charge": {"order-1": 2}, "lookup": {"a": 1}}
    assert {p.protocol_version for p in kitchen.state.calls()} == {version}


async def test_tool_error(era: tuple[KitchenServer, str]) -> None:
    kitchen, _ = era
    url = kitchen.url_for("errors.tool_error", {"errorMessage": "card declined"})
    async with connect(url) as client:
        failed = await client.call_tool("charge", {"key": "k", "amount": 1})
        served = await client.call_tool("charge", {"key": "k", "amount": 1})
    assert failed.is_error is True
    assert failed.content == [types.TextContent(type="text", text="card declined")]
    assert served.is_error is False
    assert kitchen.state_of(url).executions_by_key == {"charge": {"k": 1}}


async def test_jsonrpc_error(era: tuple[KitchenServer, str]) -> None:
    kitchen, _ = era
    url = kitchen.url_for("errors.jsonrpc_error", {"code": -32001, "message": "Upstream timeout"})
    async with connect(url) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("charge", {"key": "k", "amount": 1})
        served = await client.call_tool("charge", {"key": "k", "amount": 1})
    assert (raised.value.error.code, raised.value.error.message) == (-32001, "Upstream timeout")
    assert served.is_error is False
    assert kitchen.state_of(url).executions_by_key == {"charge": {"k": 1}}


async def test_elicitation_approval_round_trip(era: tuple[KitchenServer, str]) -> None:
    kitchen, version = era
    asked: list[str] = []

    async def approve(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    url = kitchen.url_for("elicitation.approval")
    async with connect(url, elicitation_callback=approve) as client:
        result = await client.call_tool("approve", {"action": "deploy", "key": "d1"})
    assert result.structured_content == {"action": "deploy", "approved": True, "decision": "accept"}
    assert asked == ["Approve this action: deploy?"]
    assert kitchen.state_of(url).executions_by_key == {"approve": {"d1": 1}}
    calls = kitchen.state_of(url).calls("approve")
    if version == "2026-07-28":
        # MRTR: a first round answered input_required, a second POST with a new id completed.
        assert len(calls) == 2
        assert calls[0].request_id != calls[1].request_id
    else:
        # 2025-11-25: one tools/call; elicitation/create rode its SSE stream.
        assert len(calls) == 1


async def test_elicitation_decline_runs_nothing(start_kitchen: StartKitchen) -> None:
    kitchen = start_kitchen(stateless=True, json_response=True)

    async def decline(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async with connect(kitchen.url, elicitation_callback=decline) as client:
        result = await client.call_tool("approve", {"action": "deploy"})
    assert result.structured_content == {
        "action": "deploy",
        "approved": False,
        "decision": "decline",
    }
    assert kitchen.state.executions == {}


async def test_input_required_reaches_the_wire(start_kitchen: StartKitchen) -> None:
    kitchen = start_kitchen(stateless=True, json_response=True)

    async def unused(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        raise AssertionError("the round is driven by hand here")

    # The callback only declares the form elicitation capability the tool requires.
    async with connect(kitchen.url, elicitation_callback=unused) as client:
        first: Any = await client.session.call_tool(
            "approve", {"action": "deploy"}, allow_input_required=True
        )
    assert isinstance(first, types.InputRequiredResult)
    assert first.result_type == "input_required"
    assert first.request_state
    assert first.input_requests is not None
    [request] = first.input_requests.values()
    assert isinstance(request, types.ElicitRequest)
    assert isinstance(request.params, types.ElicitRequestFormParams)
    assert request.params.requested_schema["properties"]["approve"]["type"] == "boolean"


# What the official client observes for the faults a retry layer must handle.


async def test_client_sees_a_truncated_stream_as_connection_closed(
    era: tuple[KitchenServer, str],
) -> None:
    kitchen, _ = era
    url = kitchen.url_for("sse_truncated", {"when": "after"})
    async with connect(url) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("charge", {"key": "k", "amount": 1})
    assert raised.value.error.code == -32000
    assert raised.value.error.message == "SSE stream ended without a response"
    # The tool ran although the client saw an error: a blind retry would charge twice.
    assert kitchen.state_of(url).executions_by_key == {"charge": {"k": 1}}


async def test_client_sees_a_rate_limit_body_as_its_error(era: tuple[KitchenServer, str]) -> None:
    kitchen, _ = era
    url = kitchen.url_for("rate_limit", {"body": "jsonrpc", "retryAfter": 2})
    async with connect(url) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("lookup", {"key": "a"})
    assert (raised.value.error.code, raised.value.error.message) == (-32000, "Rate limit exceeded")
    assert kitchen.state_of(url).executions == {}


async def test_a_dropped_connection_tears_the_client_down(era: tuple[KitchenServer, str]) -> None:
    kitchen, _ = era
    url = kitchen.url_for("connection_abort", {"when": "after"})
    with pytest.raises(ExceptionGroup) as raised:
        async with connect(url) as client:
            await client.call_tool("charge", {"key": "k", "amount": 1})
    assert raised.group_contains(httpx2.RemoteProtocolError, depth=None)
    assert kitchen.state_of(url).executions_by_key == {"charge": {"k": 1}}


async def test_client_does_not_reinitialize_an_expired_session(
    start_kitchen: StartKitchen,
) -> None:
    kitchen = start_kitchen(legacy_only=True)
    url = kitchen.url_for("session_expired", {})
    async with connect(url) as client:
        for _ in range(2):
            with pytest.raises(MCPError, match="Session not found"):
                await client.call_tool("charge", {"key": "k", "amount": 1})
    assert kitchen.state_of(url).executions == {}
    assert [p.method for p in kitchen.state_of(url).posts].count("initialize") == 1


async def test_slow_tool_streams_progress(era: tuple[KitchenServer, str]) -> None:
    kitchen, _ = era
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with connect(kitchen.url) as client:
        result = await client.call_tool(
            "slow", {"delay_ms": 40, "key": "s"}, progress_callback=on_progress
        )
    assert result.structured_content == {"delayMs": 40, "key": "s"}
    # A JSON-response server has no stream to carry notifications: the SDK drops them.
    assert seen == ([] if kitchen.config.json_response else [0, 1, 2, 3, 4])
    assert kitchen.state.executions_by_key == {"slow": {"s": 1}}
