"""A client factory copied or pickled by a framework still feeds the user's History.

smolagents' mcpadapt deep-copies its server parameters, the ``httpx_client_factory``
included; frameworks that run tools in other workers pickle them. The official mcp 2.x client
over ``mcp_safe_retry.httpx2.mcp_client``, against the kitchen.
"""

from __future__ import annotations

import copy
import functools
import pickle
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_safe_retry import CircuitBreaker, History, Idempotency, RetryBudget, RetryPolicy
from mcp_safe_retry.httpx2 import mcp_client
from mcp_safe_retry.kitchen import KitchenServer

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the official client is asyncio-based


@pytest.fixture(scope="module")
def kitchen() -> Iterator[KitchenServer]:
    with KitchenServer() as server:
        yield server


def pickled(value: Any) -> Any:
    return pickle.loads(pickle.dumps(value))


@pytest.mark.parametrize(
    "how", [pytest.param(copy.deepcopy, id="deepcopy"), pytest.param(pickled, id="pickle")]
)
async def test_a_copied_factory_sends_records_to_the_users_history(
    kitchen: KitchenServer, how: Callable[[Any], Any]
) -> None:
    history, budget, breaker = History(), RetryBudget(burst=5), CircuitBreaker()
    policy = RetryPolicy(tools={"lookup": Idempotency.READ}, initial_backoff=0.001)
    codes = {"statusCodes": [503, 200, 503], "method": "tools/call"}
    url = kitchen.url_for("errors.http_status_sequence", codes)
    parameters = how(
        {
            "url": url,
            "httpx_client_factory": functools.partial(
                mcp_client, policy=policy, history=history, budget=budget, breaker=breaker
            ),
        }
    )
    # As a framework builds it: its own headers, timeout and auth.
    http = parameters["httpx_client_factory"](
        headers={"X-Framework": "yes"}, timeout=httpx2.Timeout(30), auth=None
    )
    with anyio.fail_after(20):
        async with (
            http,
            Client(streamable_http_client(parameters["url"], http_client=http)) as client,
        ):
            looked_up = await client.call_tool("lookup", {"key": "a"})
            with pytest.raises(MCPError):  # the 503 is the answer: charge is UNSAFE
                await client.call_tool("charge", {"key": "c", "amount": 1})
    assert not looked_up.is_error
    tools = {r.tool: r.http_statuses for r in history.records() if r.method == "tools/call"}
    assert tools == {"lookup": (503, 200), "charge": (503,)}
    assert kitchen.state_of(url).executions == {"lookup": 1}
    assert budget.tokens < 5  # the retry was paid from the user's budget
