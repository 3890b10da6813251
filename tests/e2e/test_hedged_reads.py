"""Hedged reads end to end: the official mcp 2.x client, the kitchen's slow tail, loopback.

The first POST of the run is slow (2 s) and the second fast, so a hedge sent after 50 ms
answers the call; the kitchen's log shows both POSTs and a single execution (a client that
leaves a slow POST is never served).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp.client")

from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_safe_retry import History, Idempotency, RetryPolicy
from mcp_safe_retry.httpx2 import mcp_client
from mcp_safe_retry.kitchen import KitchenServer, parse_scenario

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

SCENARIO = "latency.slow_tail"
SLOW_MS = 2000


@pytest.fixture(params=["2025", "2026"])
def kitchen(request: pytest.FixtureRequest) -> Iterator[KitchenServer]:
    """A 2025-only kitchen (sessions, SSE answers) and a current one (JSON answers)."""
    with KitchenServer(legacy_only=request.param == "2025") as server:
        yield server


def slow_then_fast() -> dict[str, Any]:
    """Slow-tail params whose first POST is slow and second fast."""
    for seed in range(1000):
        tail: Any = parse_scenario(SCENARIO, {"slowMs": SLOW_MS, "seed": seed})
        if tail.delay_of(1)[0] and not tail.delay_of(2)[0]:
            return {"slowMs": SLOW_MS, "seed": seed}
    raise AssertionError("no seed found")


async def test_a_hedge_answers_the_slow_call(kitchen: KitchenServer) -> None:
    url = kitchen.url_for(SCENARIO, slow_then_fast())
    policy = RetryPolicy(tools={"lookup": Idempotency.READ}, hedge_after=0.05)
    history = History()
    with anyio.fail_after(20):
        async with (
            mcp_client(policy=policy, history=history) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            started = time.monotonic()
            result = await client.call_tool("lookup", {"key": "k"})
            took = time.monotonic() - started
            version = client.protocol_version
    assert not result.is_error
    assert took < SLOW_MS / 1000 / 2  # the slow first copy did not hold the call up
    (record,) = [r for r in history.records() if r.method == "tools/call"]
    assert [(str(a.kind), a.fate) for a in record.attempts] == [("post", "lost"), ("hedge", "won")]
    deadline = time.monotonic() + 5
    while True:  # the loser's POST is written to the log once the kitchen sees it gone
        state = kitchen.state_of(url)
        calls = state.calls("lookup")
        if len(calls) >= 2 or time.monotonic() > deadline:
            break
        await anyio.sleep(0.05)
    assert [p.fault for p in calls] == ["slow_tail:slow:abandoned", "slow_tail:fast"]
    assert state.executions_by_key == {"lookup": {"k": 1}}
    named = [p.cancelled_id for p in state.posts if p.method == "notifications/cancelled"]
    # 2025 sessions hear a notifications/cancelled for the loser's own id; on 2026-07-28
    # the closed connection is the cancellation. Other reads of the session (the SDK's
    # server/discover, its tools/list) are hedged too: one slower than the hedge delay
    # (a loaded machine) has a loser of its own, cancelled the same way. So each
    # cancellation is told by the id it names: every one names a lost copy, once.
    lost = {a.wire_id for r in history.records() for a in r.attempts if a.fate == "lost"}
    loser = record.attempts[0].wire_id
    if version == "2025-11-25":
        assert len(named) == len(set(named))  # no cancellation sent twice
        assert loser in named and set(named) <= lost
    else:
        assert named == []
