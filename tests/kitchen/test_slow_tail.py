"""`latency.slow_tail`: a per-POST, seeded slow tail; a client that leaves is never served."""

from __future__ import annotations

import time
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kitchen_wire import (
    StartKitchen,
    answer,
    call_tool,
    legacy_call_tool,
    legacy_handshake,
    modern_body,
    modern_headers,
)

from mcp_safe_retry.kitchen import KitchenServer, KitchenState, ScenarioError, parse_scenario
from mcp_safe_retry.kitchen._actions import Late, Pass
from mcp_safe_retry.kitchen._facts import RequestFacts
from mcp_safe_retry.kitchen._real_server import MAX_SLOW_TAIL_MS, SlowTail
from mcp_safe_retry.kitchen._scenario_base import RunCounters

NAME = "latency.slow_tail"


def tail(**params: Any) -> SlowTail:
    scenario = parse_scenario(NAME, params)
    assert isinstance(scenario, SlowTail)
    return scenario


def tool_call(request_id: int = 1) -> RequestFacts:
    return RequestFacts("POST", "tools/call", request_id, is_request=True, tool="lookup", key="k")


# -- the pure decision ----------------------------------------------------------------------


def test_defaults() -> None:
    t = tail()
    assert (t.slow_every, t.slow_ms, t.fast_ms, t.jitter_ms, t.pattern, t.seed) == (
        10,
        1000,
        0,
        0,
        "random",
        0,
    )


@pytest.mark.parametrize(
    ("params", "message"),
    [
        pytest.param({"slowEvery": 0}, "within", id="slow-every-zero"),
        pytest.param({"slowMs": MAX_SLOW_TAIL_MS + 1}, "within", id="slow-over-cap"),
        pytest.param({"fastMs": -1}, "within", id="negative-fast"),
        pytest.param({"fastMs": 6000, "jitterMs": 6000}, "at most", id="fast-plus-jitter"),
        pytest.param({"pattern": "bursty"}, "one of", id="pattern-unknown"),
        pytest.param({"seed": "x"}, "an integer", id="seed-type"),
        pytest.param({"probability": 0.1}, "unknown params", id="typo"),
    ],
)
def test_bad_params(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(NAME, params)


def test_periodic_pattern() -> None:
    t = tail(slowEvery=3, slowMs=500, fastMs=20, pattern="periodic")
    assert [t.delay_of(n) for n in range(1, 7)] == [
        (False, 20),
        (False, 20),
        (True, 500),
        (False, 20),
        (False, 20),
        (True, 500),
    ]


def test_random_pattern_replays_by_seed_and_hits_the_rate() -> None:
    draws = [tail(seed=7).delay_of(n) for n in range(1, 10_001)]
    assert draws == [tail(seed=7).delay_of(n) for n in range(1, 10_001)]
    assert draws != [tail(seed=8).delay_of(n) for n in range(1, 10_001)]
    slow = sum(s for s, _ in draws)
    assert 900 <= slow <= 1100  # one in ten, give or take three standard deviations


@given(
    params=st.fixed_dictionaries(
        {
            "slowEvery": st.integers(1, 50),
            "slowMs": st.integers(0, MAX_SLOW_TAIL_MS),
            "fastMs": st.integers(0, 5000),
            "jitterMs": st.integers(0, 5000),
            "seed": st.integers(-(2**40), 2**40),
        }
    ),
    number=st.integers(1, 10**9),
)
def test_delays_are_bounded(params: dict[str, int], number: int) -> None:
    slow, delay = tail(**params).delay_of(number)
    assert 0 <= delay <= MAX_SLOW_TAIL_MS
    if slow:
        assert delay == params["slowMs"]
    else:
        assert params["fastMs"] <= delay <= params["fastMs"] + params["jitterMs"]


def test_only_matching_requests_are_delayed() -> None:
    t = tail(slowEvery=1, slowMs=300)
    run = RunCounters()
    init = RequestFacts("POST", "initialize", 0, is_request=True)
    note = RequestFacts("POST", "notifications/initialized")
    assert t.decide(init, run, 0.0) == Pass()
    assert t.decide(note, run, 0.0) == Pass()
    assert t.decide(tool_call(), run, 0.0) == Late(0.3, "slow_tail:slow")
    assert run.matched == 1


def test_each_post_draws_its_own_delay() -> None:
    """Copies of one logical call (same tool and key, fresh ids) are numbered apart."""
    t = tail(slowEvery=2, slowMs=800, fastMs=5, pattern="periodic")
    run = RunCounters()
    actions = [t.decide(tool_call(i), run, 0.0) for i in (1, 2, 3, 4)]
    assert [a.fault for a in actions] == ["slow_tail:fast", "slow_tail:slow"] * 2


# -- on the wire ---------------------------------------------------------------------------


def settled(kitchen: KitchenServer, url: str, posts: int) -> KitchenState:
    """The run's state once `posts` POSTs are recorded (a dropped one is written late)."""
    deadline = time.monotonic() + 5
    while True:
        state = kitchen.state_of(url)
        if len(state.posts) >= posts or time.monotonic() > deadline:
            return state
        time.sleep(0.02)


@pytest.mark.e2e
def test_slow_and_fast_posts_on_the_wire(kitchen: KitchenServer) -> None:
    url = kitchen.url_for(NAME, {"slowEvery": 2, "slowMs": 400, "pattern": "periodic"})
    took = []
    with httpx.Client(timeout=5) as client:
        for key in ("a", "b"):
            started = time.monotonic()
            response = call_tool(client, url, "lookup", {"key": key})
            took.append(time.monotonic() - started)
            assert response.status_code == 200 and not answer(response)["result"]["isError"]
    assert took[0] < 0.4 <= took[1]
    state = kitchen.state_of(url)
    assert [(p.key, p.fault, p.status) for p in state.calls("lookup")] == [
        ("a", "slow_tail:fast", 200),
        ("b", "slow_tail:slow", 200),
    ]
    assert state.executions_by_key == {"lookup": {"a": 1, "b": 1}}
    assert state.to_json()["posts"][0]["key"] == "a"


@pytest.mark.e2e
def test_a_client_that_leaves_is_never_served(kitchen: KitchenServer) -> None:
    url = kitchen.url_for(NAME, {"slowEvery": 1, "slowMs": 600})
    with httpx.Client(timeout=httpx.Timeout(5, read=0.15)) as client:
        with pytest.raises(httpx.ReadTimeout):
            call_tool(client, url, "lookup", {"key": "gone"})
        state = settled(kitchen, url, 1)
        time.sleep(0.6)  # past the delay: the tool would have run by now
        [post] = kitchen.state_of(url).posts
    assert (post.fault, post.status, post.key) == ("slow_tail:slow:abandoned", None, "gone")
    assert state.executions == {} and kitchen.state_of(url).executions == {}


@pytest.mark.e2e
@pytest.mark.anyio
async def test_a_hedge_like_copy_per_logical_call(kitchen: KitchenServer) -> None:
    """Two copies of one call, as a hedging client sends them: the slow first one is
    abandoned when the fast second one answers; the log shows both POSTs, one execution."""
    seed = next(
        s for s in range(1000) if tail(seed=s).delay_of(1)[0] and not tail(seed=s).delay_of(2)[0]
    )
    url = kitchen.url_for(NAME, {"slowMs": 2000, "seed": seed})
    tool = "lookup"
    async with httpx.AsyncClient(timeout=5) as client:

        async def post(request_id: int | str) -> httpx.Response:
            body = modern_body(request_id, "tools/call", {"name": tool, "arguments": {"key": "k"}})
            return await client.post(url, json=body, headers=modern_headers("tools/call", tool))

        async with anyio.create_task_group() as tg:
            tg.start_soon(post, 1)  # the first copy: slow
            await anyio.sleep(0.1)
            hedge = await post("hedge-1")  # the second copy: fast
            tg.cancel_scope.cancel()  # the loser is cancelled, its connection closed
    assert answer(hedge)["id"] == "hedge-1"
    state = settled(kitchen, url, 2)
    calls = state.calls(tool, key="k")
    assert {p.request_id: (p.fault, p.status) for p in calls} == {
        1: ("slow_tail:slow:abandoned", None),
        "hedge-1": ("slow_tail:fast", 200),
    }
    await anyio.sleep(0.1)
    assert kitchen.state_of(url).executions_by_key == {tool: {"k": 1}}


@pytest.mark.e2e
def test_the_handshake_is_never_delayed(start_kitchen: StartKitchen) -> None:
    kitchen = start_kitchen(legacy_only=True)
    url = kitchen.url_for(NAME, {"slowEvery": 1, "slowMs": 300})
    with httpx.Client(timeout=5) as client:
        session = legacy_handshake(client, url)
        response = legacy_call_tool(client, url, session, "lookup", {"key": "s"})
    assert answer(response)["result"]["structuredContent"]["key"] == "s"
    faults = [(p.method, p.fault) for p in kitchen.state_of(url).posts]
    assert faults == [
        ("initialize", None),
        ("notifications/initialized", None),
        ("tools/call", "slow_tail:slow"),
    ]
