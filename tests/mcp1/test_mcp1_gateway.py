"""The official mcp 1.x client, bare (its own httpx client, nothing of ours in it), calling
the kitchen through a gateway process: the four cases the gateway promises every client.

mcp 1.x ends its session on any non-2xx answer; through the gateway a final HTTP error to a
request reaches it as that request's JSON-RPC error (the httpx transport's containment), so
the session carries on, as with ``mcp_safe_retry.mcp_client`` in process. Both the kitchen
and the gateway run from the main .venv (``MCP_SAFE_RETRY_KITCHEN_PYTHON``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError

from mcp_safe_retry.records import CONTAINED_ERROR_CODE
from tests.gateway_support import GatewayProcess, gateway_process
from tests.kitchen_process import Kitchen, kitchen_process

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
CHARGE = {"key": "k", "amount": 5}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def kitchen() -> Iterator[Kitchen]:
    with kitchen_process() as served:
        yield served


@pytest.fixture(scope="module")
def gateway(kitchen: Kitchen, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    folder = tmp_path_factory.mktemp("gateway")
    config = folder / "policy.toml"
    config.write_text('initial_backoff = 0.01\n[tools]\nlookup = "read"\n')
    with gateway_process(kitchen.url, folder / "calls.jsonl", "--config", str(config)) as served:
        yield served


async def calls(url: str, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """One bare mcp 1.x session: each call's result, or the McpError it raised."""
    results: list[Any] = []
    with anyio.fail_after(30):
        async with (
            streamable_http_client(url) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for tool, arguments in calls:
                try:
                    results.append(await session.call_tool(tool, arguments))
                except McpError as exc:
                    results.append(exc)
            after = await session.call_tool("lookup", {"key": "after"})
            assert not after.isError  # the session lived through every failure above
    return results


def records_of(gateway: GatewayProcess, tool: str, count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 10  # the sink writes from a thread
    while len(found := [r for r in gateway.records() if r["tool"] == tool]) < count:
        assert time.monotonic() < deadline, found
        time.sleep(0.05)
    return found


async def test_a_read_that_meets_503_is_retried_and_runs_once(
    kitchen: Kitchen, gateway: GatewayProcess
) -> None:
    codes = {"statusCodes": [503, 200], "method": "tools/call", "tool": "lookup"}
    url = kitchen.url_for("errors.http_status_sequence", codes)
    (result,) = await calls(gateway.url_for(url), ("lookup", {"key": "a"}))
    assert not result.isError
    state = kitchen.state()
    assert state["executionsByKey"]["lookup"] == {"a": 1, "after": 1}
    assert [p["status"] for p in state["posts"] if p["key"] == "a"] == [503, 200]
    record = records_of(gateway, "lookup", 1)[0]
    assert record["httpStatuses"] == [503, 200] and record["outcome"] == "TOOL_SUCCESS"
    assert record["protocolVersion"] == "2025-11-25"


async def test_an_unsafe_503_is_sent_once_and_the_session_lives(
    kitchen: Kitchen, gateway: GatewayProcess
) -> None:
    url = kitchen.url_for("errors.http_status_sequence", {"statusCodes": [503], "tool": "charge"})
    (refused,) = await calls(gateway.url_for(url), ("charge", CHARGE))
    assert isinstance(refused, McpError) and refused.error.code == CONTAINED_ERROR_CODE
    assert refused.error.data["outcome"] == "HTTP_ERROR"
    assert refused.error.data["reason"] == "not_idempotent"
    assert kitchen.posts("charge") == 1
    assert "charge" not in kitchen.state()["executionsByKey"]


async def test_a_resend_after_a_drop_is_held_and_runs_once(
    kitchen: Kitchen, gateway: GatewayProcess
) -> None:
    url = kitchen.url_for("connection_abort", {"when": "after", "tool": "charge"})
    dropped, held = await calls(gateway.url_for(url), ("charge", CHARGE), ("charge", CHARGE))
    assert isinstance(dropped, McpError) and dropped.error.data["outcome"] == "NETWORK_ERROR"
    assert isinstance(held, McpError) and held.error.data["outcome"] == "DUPLICATE_HELD"
    assert kitchen.state()["executionsByKey"]["charge"] == {"k": 1}
    assert kitchen.posts("charge") == 1
    outcomes = [r["outcome"] for r in records_of(gateway, "charge", 3)]
    assert outcomes[-2:] == ["NETWORK_ERROR", "DUPLICATE_HELD"]
