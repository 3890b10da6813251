"""The retry budget shared through a real Redis (shared/budget.py): sharing, costs, keys,
outages, a transport over it, the README's fleet snippets."""

from __future__ import annotations

import gc
import logging
import re
import threading
import time
from pathlib import Path

import anyio
import httpx
import pytest
import redis

from mcp_safe_retry import (
    AsyncRetryTransport,
    Budget,
    RetryTransport,
    get_record,
)
from mcp_safe_retry.records import Reason
from mcp_safe_retry.redis import RedisBudget, RedisCircuitBreaker
from tests.helpers import Script, rpc, status_reply
from tests.redis_support import RedisServer
from tests.shared.common import A, B, Clock, name, round_trips

# -- the budget -------------------------------------------------------------------------


def test_one_budget_for_every_process_of_a_name(redis_server: RedisServer) -> None:
    n = name()
    with (
        RedisBudget(redis_server.url, name=n, burst=3) as a,
        RedisBudget(redis_server.url, name=n, burst=3) as b,
        RedisBudget(redis_server.url, name=name(), burst=3) as other,
    ):
        assert isinstance(a, Budget)
        assert [a.allow_retry(), b.allow_retry(), a.allow_retry()] == [True] * 3
        assert not b.allow_retry() and not a.allow_retry()
        assert other.allow_retry()  # another name, another budget
        for _ in range(10):
            b.record(failed=False)  # 10 x 0.2: two retries earned back...
        b.flush()
        assert a.tokens == pytest.approx(2.0)
        assert a.allow_retry() and a.allow_retry() and not a.allow_retry()


def test_success_path_makes_no_round_trip_and_a_retry_one(
    redis_server: RedisServer, client: redis.Redis
) -> None:
    with RedisBudget(redis_server.url, name=name(), flush_interval=600) as budget:
        budget.allow_retry()  # loads the script
        before = round_trips(client)
        for _ in range(1000):
            budget.record(failed=False)
            budget.record(failed=True)
        assert round_trips(client) == before
        for _ in range(5):
            budget.allow_retry()
        assert round_trips(client) == before + 5


def test_keys_are_namespaced_expire_and_hold_no_url(
    redis_server: RedisServer, client: redis.Redis
) -> None:
    n = name()
    with (
        RedisBudget(redis_server.url, name=n) as budget,
        RedisCircuitBreaker(redis_server.url, name=n, failure_threshold=1) as breaker,
    ):
        budget.allow_retry()
        breaker.record("https://secret.test/mcp?token=hunter2", failed=True)
        breaker.refresh()
    keys = sorted(k.decode() for k in client.keys("*"))
    assert len(keys) == 2
    assert all(k.startswith(f"mcp-safe-retry:{{{n}}}:") for k in keys)
    assert all(client.pttl(k) > 0 for k in keys)
    dump = b"".join(k.encode() + repr(client.dump(k)).encode() for k in keys)
    assert b"secret" not in dump and b"hunter2" not in dump


def test_fleet_outage_costs_one_burst_not_one_per_process(redis_server: RedisServer) -> None:
    n = name()
    scripts, transports = [], []
    for _ in range(4):  # four transports as four workers would hold them
        script = Script(status_reply(503))
        budget = RedisBudget(redis_server.url, name=n)
        scripts.append(script)
        transports.append(RetryTransport(script, sleep=lambda _: None, budget=budget))
    for i in range(250):
        for transport in transports:
            httpx.Client(transport=transport).post(A, json=rpc("tools/list", id=i))
    posts = sum(len(s.requests) for s in scripts)
    assert posts == 1000 + 100 <= 1.1 * 1000 + 10
    for transport in transports:
        transport.budget.close()  # type: ignore[attr-defined]


# -- the budget when Redis fails ----------------------------------------------------------


def test_budget_falls_back_when_redis_is_killed_and_resumes(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    n = name()
    budget = RedisBudget(redis_server.url, name=n, burst=2, retry_interval=5, clock=clock)
    assert budget.allow_retry() and budget.allow_retry() and not budget.allow_retry()
    redis_server.kill()
    with caplog.at_level(logging.WARNING, logger="mcp_safe_retry"):
        answers = [budget.allow_retry() for _ in range(5)]
    assert answers == [True, True, False, False, False]  # the local budget, full
    assert len([r for r in caplog.records if "unreachable" in r.message]) == 1
    redis_server.start()
    clock.now += 5
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="mcp_safe_retry"):
        assert budget.allow_retry()  # the shared budget again...
    # ...which a restarted Redis without persistence holds full: that answer spent one of two
    assert budget.tokens == pytest.approx(1.0)
    assert any("answers again" in r.message for r in caplog.records)
    budget.close()


def test_budget_with_a_hung_redis_answers_within_the_timeout(redis_server: RedisServer) -> None:
    budget = RedisBudget(redis_server.url, name=name(), timeout=0.2, retry_interval=60)
    assert budget.allow_retry()
    redis_server.pause()
    try:
        started = time.monotonic()
        assert budget.allow_retry()  # the local budget, after one timeout
        assert not budget.link.up
        assert all(budget.allow_retry() for _ in range(50))  # no waiting while it is down
        assert time.monotonic() - started < 5  # a hang guard, not a performance figure
        budget.record(failed=False)
        budget.flush()  # never raises
    finally:
        redis_server.resume()
    budget.close()


@pytest.mark.anyio
async def test_async_consult_never_blocks_the_event_loop(redis_server: RedisServer) -> None:
    budget = RedisBudget(redis_server.url, name=name(), timeout=0.5, retry_interval=60)
    assert await budget.allow_retry_async()
    redis_server.pause()
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.01)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(tick)
            assert await budget.allow_retry_async()  # waits on a worker thread, not the loop
            tg.cancel_scope.cancel()
    finally:
        redis_server.resume()
    assert ticks >= 10  # the loop kept running through the 0.5 s timeout
    budget.close()


def test_refunds_are_atomic_and_never_above_the_burst(redis_server: RedisServer) -> None:
    n = name()
    budgets = [RedisBudget(redis_server.url, name=n, burst=50) for _ in range(4)]
    for budget in budgets:
        for _ in range(10):
            assert budget.allow_retry()
    assert budgets[0].tokens == pytest.approx(10.0)

    def give_back(budget: RedisBudget) -> None:
        for _ in range(5):
            budget.refund()
            budget.flush()

    threads = [threading.Thread(target=give_back, args=(b,)) for b in budgets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert budgets[0].tokens == pytest.approx(30.0)  # 4 x 5 given back, none lost
    for budget in budgets:
        for _ in range(10):
            budget.refund()
        budget.flush()
    assert budgets[0].tokens == pytest.approx(50.0)  # never above the burst
    for budget in budgets:
        budget.close()


def test_a_refund_while_redis_is_down_goes_to_the_local_budget(
    redis_server: RedisServer,
) -> None:
    budget = RedisBudget(redis_server.url, name=name(), burst=2, retry_interval=60)
    redis_server.kill()
    assert budget.allow_retry() and budget.allow_retry()  # the local budget, now empty
    assert not budget.allow_retry()
    budget.refund()
    assert budget.local.tokens == pytest.approx(1.0) and budget.allow_retry()
    budget.close()


def test_no_redis_at_all(caplog: pytest.LogCaptureFixture) -> None:
    budget = RedisBudget("redis://127.0.0.1:1/0", name="x", burst=1)
    breaker = RedisCircuitBreaker("redis://127.0.0.1:1/0", name="x", failure_threshold=1)
    with caplog.at_level(logging.WARNING, logger="mcp_safe_retry"):
        assert budget.allow_retry() and not budget.allow_retry()
        breaker.record(A, failed=True)
        breaker.refresh()
        assert not breaker.allow(A) and breaker.allow(B)
    assert len([r for r in caplog.records if "unreachable" in r.message]) == 2  # one each
    budget.close()
    breaker.close()


def test_a_url_or_a_client_and_nothing_else(redis_server: RedisServer) -> None:
    with redis.Redis.from_url(redis_server.url, socket_timeout=0.5) as c:
        budget = RedisBudget(c, name=name())
        assert budget.allow_retry()
        budget.close()
        assert c.ping()  # a client passed in stays open: it is the caller's
    with pytest.raises(TypeError):
        RedisBudget(42, name="x")  # type: ignore[arg-type]


@pytest.mark.parametrize("failure", ["kill", "pause"])
def test_calls_through_a_transport_survive_redis_going_away(
    redis_server: RedisServer, failure: str
) -> None:
    script = Script(status_reply(503))
    budget = RedisBudget(redis_server.url, name=name(), burst=20, timeout=0.2, retry_interval=60)
    transport = RetryTransport(script, sleep=lambda _: None, budget=budget)
    client = httpx.Client(transport=transport)
    responses = []
    try:
        for i in range(60):
            if i == 5:
                redis_server.kill() if failure == "kill" else redis_server.pause()
            responses.append(client.post(A, json=rpc("tools/list", id=i)))
    finally:
        if failure == "pause":
            redis_server.resume()
    records = [get_record(r) for r in responses]
    assert all(r is not None and r.complete for r in records)
    reasons = [r.attempts[-1].decision.reason for r in records]  # type: ignore[union-attr]
    assert reasons.count(Reason.THROTTLED) > 0  # the local budget took over and ran dry
    # 5 calls x 2 retries from the shared budget, then the local one's 20
    assert len(script.requests) == 60 + 10 + 20
    budget.close()


def test_readme_fleet_snippets_run_as_written(redis_server: RedisServer) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "fleet.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, re.DOTALL)
    assert len(blocks) == 2
    for block in blocks:
        code = block.replace("redis://127.0.0.1:6379/0", redis_server.url)
        exec(compile(code, "docs/fleet.md", "exec"), {})


def test_a_forgotten_budget_leaves_no_thread_behind(redis_server: RedisServer) -> None:
    n = name()
    budget = RedisBudget(redis_server.url, name=n, flush_interval=0.02)
    budget.record(failed=False)  # starts the background thread
    (thread,) = [t for t in threading.enumerate() if t.name == f"mcp-safe-retry budget {n}"]
    del budget
    gc.collect()
    thread.join(5)
    assert not thread.is_alive()


@pytest.mark.anyio
async def test_a_sync_consult_on_an_event_loop_never_waits_on_redis(
    redis_server: RedisServer,
) -> None:
    # A consult made on the event loop without awaiting (allow_retry(), not
    # allow_retry_async()) answers from the shared count last read and sends the spend in
    # the background; the transport below awaits allow_retry_async() (a worker thread).
    n = name()
    with (
        RedisBudget(redis_server.url, name=n, burst=5) as a,
        RedisBudget(redis_server.url, name=n, burst=5) as b,
    ):
        assert [a.allow_retry() for _ in range(6)] == [True] * 5 + [False]
        await anyio.to_thread.run_sync(a.flush)
        assert await anyio.to_thread.run_sync(lambda: b.tokens) == pytest.approx(0.0)
        redis_server.pause()
        try:
            script = Script(status_reply(503))
            transport = AsyncRetryTransport(script, budget=a)
            ticks = 0

            async def tick() -> None:
                nonlocal ticks
                while True:
                    ticks += 1
                    await anyio.sleep(0.01)

            with anyio.fail_after(10):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(tick)
                    async with httpx.AsyncClient(transport=transport) as client:
                        for i in range(20):
                            await client.post(A, json=rpc("tools/list", id=i))
                    tg.cancel_scope.cancel()
            # the fleet's budget is spent: no retry, unless the background flush met the hung
            # Redis first, and the local budget (5) took over
            assert 20 <= len(script.requests) <= 25
            assert ticks > 0
        finally:
            redis_server.resume()
