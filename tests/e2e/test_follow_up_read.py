"""The SDK's own follow-up read end to end: the official mcp 2.x client against the kitchen.

mcp 2.x ``Client.call_tool`` sends its own ``tools/list`` after a ``tools/call`` of a tool the
session never listed (to validate the result against the tool's output schema). When that
read failed (503 after the retries, or the breaker open by then), ``call_tool`` raised
although the UNSAFE ``charge`` ran and its record said ``TOOL_SUCCESS``: the application's
retry ran ``charge`` again. Measured before: 10 of 10 cases, both eras, even when the same
server's listing was read earlier in the process. Now the read is served the last good
answer (marked stale in its record) and ``call_tool`` returns.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_safe_retry import CircuitBreaker, History
from mcp_safe_retry.httpx2 import mcp_client
from mcp_safe_retry.kitchen import KitchenServer
from mcp_safe_retry.records import Outcome

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
CASES = 10


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the official client is asyncio-based


@pytest.fixture(params=["2026", "2025"], scope="module")
def kitchen(request: pytest.FixtureRequest) -> Iterator[KitchenServer]:
    with KitchenServer(legacy_only=request.param == "2025") as server:
        yield server


@asynccontextmanager
async def session(url: str, **options: Any) -> AsyncIterator[Client]:
    """A new session of the official client over a new ``mcp_client``."""
    async with (
        mcp_client(**options) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


async def test_a_failed_follow_up_read_is_served_the_last_listing(kitchen: KitchenServer) -> None:
    answered = 0
    for case in range(CASES):
        history = History()
        # Only tools/list POSTs count: the first is answered, every later one gets 503.
        url = kitchen.url_for(
            "errors.http_status_sequence", {"statusCodes": [200, 503], "method": "tools/list"}
        )
        with anyio.fail_after(30):
            async with session(url, history=history) as client:  # an earlier session lists
                await client.list_tools()
            async with session(url, history=history) as client:  # a new one calls charge
                result = await client.call_tool("charge", {"key": f"k{case}", "amount": 1})
        assert not result.is_error
        assert kitchen.state_of(url).executions_by_key == {"charge": {f"k{case}": 1}}
        listings = [r for r in history.records() if r.method == "tools/list"]
        follow_up = listings[-1]
        assert len(listings) == 2 and follow_up.http_statuses == (503, 503, 503)
        assert follow_up.outcome == Outcome.RPC_SUCCESS and follow_up.served_stale is not None
        (charged,) = [r for r in history.records() if r.method == "tools/call"]
        assert charged.outcome == Outcome.TOOL_SUCCESS
        answered += 1
    assert answered == CASES


class OpensAfterTheCall(CircuitBreaker):
    """A breaker whose circuit is open from the moment the tools/call has its record (as if
    other calls' failures had opened it in between): it refuses every later request."""

    def __init__(self, history: History) -> None:
        super().__init__()
        self.history = history
        self.refused = 0

    def allow(self, key: str) -> bool:
        if any(r.method == "tools/call" for r in self.history.records()):
            self.refused += 1
            return False
        return super().allow(key)


async def test_a_follow_up_read_passes_the_circuit_other_failures_opened(
    kitchen: KitchenServer,
) -> None:
    """The circuit opens between the tools/call and its follow-up read: the read is sent
    all the same, since the server has just answered (and a write would not be)."""
    for case in range(CASES):
        history = History()
        breaker = OpensAfterTheCall(history)
        url = kitchen.url_for("baseline")
        with anyio.fail_after(30):
            async with session(url, history=history, breaker=breaker) as client:
                result = await client.call_tool("charge", {"key": f"b{case}", "amount": 1})
        assert not result.is_error and breaker.refused >= 1
        listings = [r for r in history.records() if r.method == "tools/list"]
        assert listings and listings[-1].outcome == Outcome.RPC_SUCCESS
        assert listings[-1].post_count == 1 and listings[-1].served_stale is None


async def test_with_no_listing_to_serve_the_application_s_re_send_is_held(
    kitchen: KitchenServer,
) -> None:
    """No listing was ever read: the follow-up read fails, ``call_tool`` raises although the
    charge ran, and the application sends the same charge again: it is held (the call it
    repeats named), the kitchen ran it once. Both eras, ten cases each."""
    from mcp.shared.exceptions import MCPError

    from mcp_safe_retry.shells.wiring import LISTINGS

    for case in range(CASES):
        LISTINGS.clear()  # a process that never read this server's listing (the tests above did)
        history = History()
        url = kitchen.url_for(
            "errors.http_status_sequence", {"statusCodes": [503], "method": "tools/list"}
        )
        arguments = {"key": f"n{case}", "amount": 1}
        with anyio.fail_after(30):
            async with session(url, history=history) as client:
                with pytest.raises(MCPError):  # the follow-up read failed: call_tool raises
                    await client.call_tool("charge", arguments)
            async with session(url, history=history) as client:  # the application retries
                with pytest.raises(MCPError) as held:
                    await client.call_tool("charge", arguments)
        assert kitchen.state_of(url).executions_by_key == {"charge": {f"n{case}": 1}}
        assert held.value.error.data["outcome"] == "DUPLICATE_HELD"
        calls = [r for r in history.records() if r.method == "tools/call"]
        assert [c.outcome for c in calls] == [Outcome.TOOL_SUCCESS, Outcome.DUPLICATE_HELD]
        assert calls[1].duplicate_of is not None
        assert calls[1].duplicate_of.earlier.request_id == calls[0].request_id
