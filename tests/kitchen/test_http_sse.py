"""The kitchen's HTTP+SSE transport (2024-11-05): ``GET /sse`` and ``POST /messages/``, the
SDK's own legacy app behind the fault layer, each stream's POSTs in the run its GET named."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
from mcp.client import Client
from mcp.client.sse import sse_client
from mcp.shared.exceptions import MCPError

from mcp_safe_retry.kitchen import KitchenServer

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the official client is asyncio-based


@pytest.fixture(scope="module")
def kitchen() -> Iterator[KitchenServer]:
    with KitchenServer() as server:
        yield server


async def test_the_legacy_transport_runs_tools_in_the_run_its_stream_named(
    kitchen: KitchenServer,
) -> None:
    url = kitchen.sse_url_for("baseline")
    with anyio.fail_after(20):
        async with Client(sse_client(url)) as client:
            found = await client.call_tool("lookup", {"key": "a"})
    assert not found.is_error
    state = kitchen.state_of(url)
    assert state.executions == {"lookup": 1}
    assert "tools/call" in [post.method for post in state.posts]


async def test_a_status_fault_answers_the_post(kitchen: KitchenServer) -> None:
    """The kitchen's 503 goes to the POST, which the bare SDK never reads: its POST writer
    stops, and the call waits (the transport puts the error on the stream instead: see
    tests/e2e/test_legacy_sse.py)."""
    codes = {"statusCodes": [503], "method": "tools/call"}
    url = kitchen.sse_url_for("errors.http_status_sequence", codes)
    with anyio.move_on_after(3) as waited:
        async with Client(sse_client(url)) as client:
            with pytest.raises(MCPError):
                await client.call_tool("lookup", {"key": "a"})
    assert waited.cancelled_caught  # the bare client waited for good
    assert kitchen.state_of(url).executions == {}
