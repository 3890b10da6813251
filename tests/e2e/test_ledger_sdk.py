"""The call ledger (issue 27) under the official mcp 2.x client (over httpx2's
``mcp_client``) against the kitchen, in both protocol eras (2025-11-25, 2026-07-28).

A new client per call, the SDK's own timeout followed by the same call again (from the same
client or a fresh one), and two identical calls at once: each time the kitchen runs
``charge`` once, and the caller of the repeat gets a clear error naming the first call (or
the first call's answer). Each case asserts the run count first: on a transport without the
ledger it fails with "the tool ran 2 times".
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_safe_retry import DuplicateCallError, History
from mcp_safe_retry.httpx2 import mcp_client
from mcp_safe_retry.kitchen import KitchenServer
from mcp_safe_retry.records import CONTAINED_ERROR_CODE
from tests.e2e.ledger_support import (
    ABORT_AFTER,
    GIVE_UP_S,
    SLOW,
    SLOW_S,
    TIMEOUT,
    assert_ran,
    own_ledger,
    wait_for_runs,
)

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
CHARGE = {"key": "k", "amount": 5}
SDK_TIMEOUT_S = 1.0  # Client.call_tool(..., read_timeout_seconds=1)
SLOWER = ("baseline", {"delayMs": 2000, "tool": "charge"})  # longer than the SDK's timeout
HELD = {"DUPLICATE_HELD", "DUPLICATE_IN_FLIGHT"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the official client is asyncio-based


@pytest.fixture(params=["2026", "2025"], scope="module")
def kitchen(request: pytest.FixtureRequest) -> Iterator[KitchenServer]:
    with KitchenServer(legacy_only=request.param == "2025") as server:
        yield server


def era(kitchen: KitchenServer) -> str:
    return "2025-11-25" if kitchen.config.legacy_only else "2026-07-28"


@asynccontextmanager
async def connected(url: str, http: httpx2.AsyncClient) -> AsyncIterator[Client]:
    with anyio.fail_after(TIMEOUT):
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client


@asynccontextmanager
async def session(url: str, history: History, **options: Any) -> AsyncIterator[Client]:
    """A client of its own (a new ``mcp_client``, a new session), as a framework's
    per-call session or reconnect makes one."""
    async with mcp_client(history=history, **options) as http, connected(url, http) as client:
        yield client


def charges(history: History) -> list[Any]:
    return [r for r in history.records() if r.method == "tools/call" and r.tool == "charge"]


async def settled(history: History) -> None:
    """Wait (bounded) until the charge that was sent has ended (a History holds finished
    calls): the one the SDK timed out ends when its late answer arrives (2025-11-25), or
    ended when the SDK closed its POST (2026-07-28)."""
    with anyio.move_on_after(TIMEOUT / 4):
        while not any(r.post_count == 1 for r in charges(history)):
            await anyio.sleep(0.02)


def held_error(raised: MCPError) -> dict[str, Any]:
    """The contained error of a held repeat: its data (``outcome``, ``duplicateOf``)."""
    error = raised.error
    assert error.code == CONTAINED_ERROR_CODE, error
    assert error.data["outcome"] in HELD, error.data
    assert "not sent" in error.message, error.message
    data: dict[str, Any] = error.data
    return data


def assert_repeat(result: Any, kitchen: KitchenServer, first_id: Any, *, running: bool) -> None:
    """The repeat of a call the SDK timed out, naming it. On 2025-11-25 the SDK sent
    notifications/cancelled and left the POST open: while the charge runs the repeat is in
    flight; once its late answer came (to nobody) the repeat joins it, getting that answer
    (the charge that ran). On 2026-07-28 the SDK closed the POST: no answer will come, the
    charge may have run: held."""
    if era(kitchen) == "2025-11-25" and not running:
        assert not isinstance(result, MCPError), result
        assert not result.is_error and result.structured_content["execution"] == 1, result
        return
    assert isinstance(result, MCPError), result
    data = held_error(result)
    assert data["duplicateOf"]["requestId"] == first_id, data
    expected = "DUPLICATE_IN_FLIGHT" if era(kitchen) == "2025-11-25" else "DUPLICATE_HELD"
    assert data["outcome"] == expected, data


async def attempt(url: str, history: History, **options: Any) -> Any:
    """One charge over a session of its own: its result, or what was raised (the call's
    error, or the session torn down: an exception group)."""
    try:
        async with session(url, history, **options) as client:
            return await charge(client)
    except BaseExceptionGroup as exc:
        return exc


async def charge(client: Client, **options: Any) -> Any:
    """One charge: its result or its error."""
    try:
        return await client.call_tool("charge", CHARGE, **options)
    except MCPError as exc:
        return exc


@pytest.mark.parametrize("contain", [True, False], ids=["contained", "raised"])
async def test_a_new_client_per_call_is_held(kitchen: KitchenServer, contain: bool) -> None:
    """Case 1: two clients of one process that share nothing explicitly: the charge ran and
    its connection dropped under the first; the second client's call is held: run once."""
    url = kitchen.url_for(*ABORT_AFTER)
    first, second = History(), History()
    dropped_error = await attempt(url, first, contain_failures=contain)
    held = await attempt(url, second, contain_failures=contain)
    assert_ran(kitchen, url, "k")
    (dropped,) = charges(first)
    (repeat,) = charges(second)
    assert str(dropped.outcome) == "NETWORK_ERROR"
    assert str(repeat.outcome) == "DUPLICATE_HELD" and repeat.post_count == 0
    assert repeat.duplicate_of is not None
    assert repeat.duplicate_of.earlier.request_id == dropped.request_id
    if contain:
        assert isinstance(dropped_error, MCPError) and isinstance(held, MCPError), held
        assert held_error(held)["duplicateOf"]["requestId"] == dropped.request_id
    else:
        assert isinstance(held, BaseExceptionGroup), held
        assert held.subgroup(DuplicateCallError) is not None


async def test_the_sdk_timeout_then_a_fresh_client(kitchen: KitchenServer) -> None:
    """Case 2: the SDK's timeout on a slow charge, then the application retries from a
    fresh client while the charge still runs: held (on 2025-11-25 the SDK leaves the POST
    open: in flight; on 2026-07-28 it closes it: may have run); once the charge ran, a
    retry from that client joins its late answer (2025-11-25) or is held: run once."""
    url = kitchen.url_for(*SLOW)
    first, retry = History(), History()
    async with session(url, first) as client:
        timed_out = await charge(client, read_timeout_seconds=GIVE_UP_S)
        async with session(url, retry) as fresh:
            early = await charge(fresh)
            await wait_for_runs(kitchen, url, "k", 1)
            await settled(first)  # the late answer reached the first transport (2025-11-25)
            late = await charge(fresh)
    assert_ran(kitchen, url, "k")
    assert isinstance(timed_out, MCPError)  # the SDK's own timeout error
    (first_call,) = charges(first)
    assert_repeat(early, kitchen, first_call.request_id, running=True)
    assert_repeat(late, kitchen, first_call.request_id, running=False)


async def test_the_sdk_timeout_then_the_same_call_again(kitchen: KitchenServer) -> None:
    """Case 3: ``Client.call_tool(..., read_timeout_seconds=1)`` on a charge that takes 2 s,
    then the application sends the same call again: at once (the charge still running), and
    once its late answer came (on 2025-11-25 the SDK sent notifications/cancelled and threw
    that answer away): held, then given the first call's answer (2025-11-25), or held both
    times (2026-07-28); run once."""
    url = kitchen.url_for(*SLOWER)
    history = History()
    async with session(url, history) as client:
        timed_out = await charge(client, read_timeout_seconds=SDK_TIMEOUT_S)
        at_once = await charge(client)
        await wait_for_runs(kitchen, url, "k", 1)
        await settled(history)  # the late answer reached the transport (2025-11-25)
        later = await charge(client)
    assert_ran(kitchen, url, "k")
    assert isinstance(timed_out, MCPError) and timed_out.error.code != CONTAINED_ERROR_CODE
    (first,) = [r for r in charges(history) if r.post_count == 1]  # the one sent
    assert_repeat(at_once, kitchen, first.request_id, running=True)
    assert_repeat(later, kitchen, first.request_id, running=False)
    verdicts = [str(r.duplicate_of.verdict) for r in charges(history) if r.duplicate_of]
    joined = ["joined"] if era(kitchen) == "2025-11-25" else ["held"]
    assert verdicts == ["held", *joined], verdicts


async def test_concurrent_twins_over_one_client(kitchen: KitchenServer) -> None:
    """Case 4: two identical charges at once over one ``mcp_client`` while the first is
    slow: the second is not sent (``DUPLICATE_IN_FLIGHT``), the first answers: run once."""
    url = kitchen.url_for(*SLOW)
    history = History()
    results: dict[str, Any] = {}

    async def call(name: str, client: Client) -> None:
        results[name] = await charge(client)

    async with (
        session(url, history, ledger=own_ledger()) as client,
        anyio.create_task_group() as tasks,
    ):
        tasks.start_soon(call, "first", client)
        await anyio.sleep(GIVE_UP_S)
        tasks.start_soon(call, "twin", client)
    assert_ran(kitchen, url, "k")
    first = results["first"]
    assert not isinstance(first, MCPError) and first.structured_content["chargeId"] == "ch_k_1"
    assert isinstance(results["twin"], MCPError), results["twin"]
    data = held_error(results["twin"])
    assert data["outcome"] == "DUPLICATE_IN_FLIGHT"
    sent = [r for r in charges(history) if r.post_count == 1]
    assert len(sent) == 1 and data["duplicateOf"]["requestId"] == sent[0].request_id


async def test_concurrent_twins_without_containment(kitchen: KitchenServer) -> None:
    """Case 4 with ``contain_failures=False``: the twin's ``DuplicateCallError`` ends the
    session (as any transport error does in mcp 2.x), and with it the wait for the first
    call; the first charge still runs, once: the twin was never sent."""
    url = kitchen.url_for(*SLOW)
    history = History()

    async def twins() -> None:
        async with (
            session(url, history, ledger=own_ledger(), contain_failures=False) as client,
            anyio.create_task_group() as tasks,
        ):
            tasks.start_soon(client.call_tool, "charge", CHARGE)
            await anyio.sleep(GIVE_UP_S)
            tasks.start_soon(client.call_tool, "charge", CHARGE)

    with pytest.raises(BaseExceptionGroup) as torn:
        await twins()
    assert torn.value.subgroup(DuplicateCallError) is not None, torn.value
    await wait_for_runs(kitchen, url, "k", 1)
    await anyio.sleep(SLOW_S / 2)  # long enough for a twin, had it been sent, to run too
    assert_ran(kitchen, url, "k")
    twin = next(r for r in charges(history) if r.post_count == 0)
    assert str(twin.outcome) == "DUPLICATE_IN_FLIGHT"
