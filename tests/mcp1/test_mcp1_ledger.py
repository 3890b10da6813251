"""The call ledger (issue 27) under the official mcp 1.x client (httpx, through
``mcp_safe_retry.mcp_client``) against the kitchen (served by the mcp 2.x environment).

A new client per call (case 1) and two identical calls at once over one client (case 4):
the kitchen runs ``charge`` once, and the repeat's caller gets an error naming the first
call. The run count is asserted first: without the ledger it fails with "ran 2 times".
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError

import mcp_safe_retry
from mcp_safe_retry import DuplicateCallError, History, mcp_client
from mcp_safe_retry.records import CONTAINED_ERROR_CODE
from tests.kitchen_process import Kitchen, kitchen_process

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
CHARGE = {"key": "k", "amount": 5}
TIMEOUT = 20.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def kitchen() -> Iterator[Kitchen]:
    with kitchen_process() as served:
        yield served


def assert_ran_once(kitchen: Kitchen) -> None:
    runs = kitchen.state()["executionsByKey"].get("charge", {}).get("k", 0)
    assert runs == 1, f"the tool ran {runs} times (expected 1)"


def charges(history: History) -> list[Any]:
    return [r for r in history.records() if r.method == "tools/call" and r.tool == "charge"]


async def charge(session: ClientSession) -> Any:
    """One charge: its result, or the JSON-RPC error it met."""
    try:
        return await session.call_tool("charge", CHARGE)
    except McpError as exc:
        return exc


async def attempt(url: str, history: History, **options: Any) -> Any:
    """One charge over a client and session of its own (as a framework's per-call session
    makes them): its result, or what was raised (the session torn down: a group)."""
    try:
        with anyio.fail_after(TIMEOUT):
            async with (
                mcp_client(history=history, **options) as http,
                streamable_http_client(url, http_client=http) as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await charge(session)
    except BaseExceptionGroup as exc:
        return exc


def held_data(error: Any, outcome: str) -> dict[str, Any]:
    """The contained error of a held repeat (``outcome``): its data."""
    assert isinstance(error, McpError), error
    assert error.error.code == CONTAINED_ERROR_CODE and "not sent" in error.error.message
    data: dict[str, Any] = error.error.data
    assert data["outcome"] == outcome, data
    return data


@pytest.mark.parametrize("contain", [True, False], ids=["contained", "raised"])
async def test_a_new_client_per_call_is_held(kitchen: Kitchen, contain: bool) -> None:
    """Case 1: the charge ran, its connection dropped; a new client of the same process
    sends it again: held, run once."""
    url = kitchen.url_for("connection_abort", {"when": "after", "tool": "charge"})
    first, second = History(), History()
    dropped = await attempt(url, first, contain_failures=contain)
    held = await attempt(url, second, contain_failures=contain)
    assert_ran_once(kitchen)
    (sent,) = charges(first)
    (repeat,) = charges(second)
    assert str(sent.outcome) == "NETWORK_ERROR" and repeat.post_count == 0
    assert str(repeat.outcome) == "DUPLICATE_HELD"
    if contain:
        assert isinstance(dropped, McpError)
        named = held_data(held, "DUPLICATE_HELD")["duplicateOf"]
        assert named["requestId"] == sent.request_id and named["delivery"] == "may_have_run"
    else:
        assert isinstance(held, BaseExceptionGroup), held
        assert held.subgroup(DuplicateCallError) is not None


async def test_concurrent_twins_over_one_client(kitchen: Kitchen) -> None:
    """Case 4: two identical charges at once over one client while the first is slow:
    the second is not sent (``DUPLICATE_IN_FLIGHT``), the first answers: run once."""
    url = kitchen.url_for("baseline", {"delayMs": 1200, "tool": "charge"})
    history = History()
    results: dict[str, Any] = {}

    async def call(name: str, session: ClientSession) -> None:
        results[name] = await charge(session)

    with anyio.fail_after(TIMEOUT):
        async with (
            mcp_client(history=history, ledger=mcp_safe_retry.CallLedger()) as http,
            streamable_http_client(url, http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(call, "first", session)
                await anyio.sleep(0.3)
                tasks.start_soon(call, "twin", session)
    assert_ran_once(kitchen)
    assert not isinstance(results["first"], McpError), results["first"]
    assert results["first"].structuredContent["chargeId"] == "ch_k_1"
    data = held_data(results["twin"], "DUPLICATE_IN_FLIGHT")
    (sent,) = [r for r in charges(history) if r.post_count == 1]
    assert data["duplicateOf"]["requestId"] == sent.request_id


async def test_the_sdk_timeout_then_the_same_call_again(kitchen: Kitchen) -> None:
    """Case 3 under mcp 1.x: ``call_tool(..., read_timeout_seconds=1 s)`` on a charge that
    takes 2 s, then the same call again at once (held: still in flight) and once the late
    answer came. mcp 1.30 stops waiting without a word to the server or the transport (no
    notifications/cancelled, the POST left open); the re-send while the call runs is the
    sign: the late answer is kept, and the second re-send joins it (run once)."""
    url = kitchen.url_for("baseline", {"delayMs": 2000, "tool": "charge"})
    history = History()
    timeout = timedelta(seconds=1)
    with anyio.fail_after(TIMEOUT):
        async with (
            mcp_client(history=history) as http,
            streamable_http_client(url, http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            with pytest.raises(McpError, match="Timed out"):
                await session.call_tool("charge", CHARGE, read_timeout_seconds=timeout)
            at_once = await charge(session)
            with anyio.move_on_after(3):  # the charge runs; its late answer arrives
                while not any(r.post_count == 1 for r in charges(history)):
                    await anyio.sleep(0.02)
            later = await charge(session)
    held_data(at_once, "DUPLICATE_IN_FLIGHT")
    assert_ran_once(kitchen)
    assert not isinstance(later, McpError), later
    assert later.structuredContent is not None and later.structuredContent["execution"] == 1
