"""The circuit breaker shared through a real Redis (shared/breaker.py, shared/lua.py): trips
across processes, first checks, the background refresh, hangs, the Lua script following the
local breaker."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import anyio
import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_safe_retry import (
    Breaker,
    CircuitBreaker,
)
from mcp_safe_retry.core.breaker import CircuitState
from mcp_safe_retry.redis import RedisCircuitBreaker
from tests.redis_support import RedisServer, redis_server_binary
from tests.shared.common import A, B, Clock, name, round_trips

# -- the breaker ------------------------------------------------------------------------


def test_a_trip_in_one_process_holds_back_the_others_and_a_probe_closes_it(
    redis_server: RedisServer,
) -> None:
    n = name()
    a = RedisCircuitBreaker(redis_server.url, name=n, open_for=0.3, refresh=600)
    b = RedisCircuitBreaker(redis_server.url, name=n, open_for=0.3, refresh=600)
    assert isinstance(a, Breaker)
    assert b.allow(A) and b.allow(B)  # B now reads both circuits with each refresh
    for _ in range(5):
        a.record(A, failed=True)
    a.refresh()
    assert not a.allow(A)
    assert b.allow(A)  # not yet read...
    b.refresh()
    assert not b.allow(A) and b.allow(B)  # ...and after one refresh, held back
    time.sleep(0.35)
    assert b.allow(A)  # the fleet's one probe is B's
    assert not a.allow(A)
    b.record(A, failed=False)
    b.refresh()
    a.refresh()
    assert a.allow(A) and b.allow(A)
    assert a.state(A) is CircuitState.CLOSED
    a.close()
    b.close()


def test_the_first_check_for_a_server_reads_redis(
    redis_server: RedisServer, client: redis.Redis
) -> None:
    n = name()
    a = RedisCircuitBreaker(redis_server.url, name=n, refresh=600)
    for _ in range(5):
        a.record(A, failed=True)
    a.refresh()  # the fleet's circuit for A is open
    assert a.allow(B)  # (the script a first check runs is loaded in Redis now)
    late = RedisCircuitBreaker(redis_server.url, name=n, refresh=600)  # nothing read yet
    before = round_trips(client)
    assert not late.allow(A)  # its first check read Redis: held back
    assert late.state(A) is CircuitState.OPEN and late.retry_in(A) is not None
    assert late.allow(B)  # a closed circuit: one round trip too...
    assert [late.allow(A) for _ in range(5)] == [False] * 5  # ...and then none
    assert all(late.allow(B) for _ in range(5))
    assert round_trips(client) - before == 2
    a.close()
    late.close()


def test_a_first_check_redis_cannot_answer_uses_the_local_state(
    redis_server: RedisServer,
) -> None:
    clock = Clock()
    n = name()
    breaker = RedisCircuitBreaker(
        redis_server.url, name=n, timeout=0.2, retry_interval=60, refresh=600, clock=clock
    )
    redis_server.pause()
    try:
        started = time.monotonic()
        assert breaker.allow(A)  # the local breaker's answer, after one timeout at most
        assert time.monotonic() - started < 5  # a hang guard, not a performance figure
        assert breaker.allow(A) and breaker.link.down  # no more waiting while it is down
    finally:
        redis_server.resume()
    other = RedisCircuitBreaker(redis_server.url, name=n, refresh=600)
    for _ in range(5):
        other.record(A, failed=True)
    other.refresh()  # the fleet's circuit opens meanwhile
    clock.now += 60  # Redis may be tried again
    breaker.refresh()  # the background read: A was kept to be read with the others
    assert breaker.state(A) is CircuitState.OPEN
    breaker.close()
    other.close()


@pytest.mark.anyio
async def test_an_async_first_check_reads_redis_off_the_event_loop(
    redis_server: RedisServer,
) -> None:
    n = name()
    a = RedisCircuitBreaker(redis_server.url, name=n, refresh=600)
    for _ in range(5):
        a.record(A, failed=True)
    await anyio.to_thread.run_sync(a.refresh)
    late = RedisCircuitBreaker(redis_server.url, name=n, refresh=600, timeout=0.5)
    assert not await late.allow_async(A)
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
            assert await late.allow_async(B)  # Redis hung: the local answer, from a thread
            tg.cancel_scope.cancel()
    finally:
        redis_server.resume()
    assert ticks >= 10  # the loop kept running through the 0.5 s timeout
    await anyio.to_thread.run_sync(a.close)
    await anyio.to_thread.run_sync(late.close)


def test_the_background_refresh_spreads_a_trip(redis_server: RedisServer) -> None:
    n = name()
    with (
        RedisCircuitBreaker(redis_server.url, name=n, refresh=0.05) as a,
        RedisCircuitBreaker(redis_server.url, name=n, refresh=0.05) as b,
    ):
        assert b.allow(A)
        for _ in range(5):
            a.record(A, failed=True)
        for _ in range(200):  # bounded: 10 s at most
            if not b.allow(A):
                break
            time.sleep(0.05)
        assert not b.allow(A) and not a.allow(A)


@pytest.mark.anyio
async def test_async_probe(redis_server: RedisServer) -> None:
    with RedisCircuitBreaker(
        redis_server.url, name=name(), open_for=0.2, failure_threshold=1
    ) as breaker:
        breaker.record(A, failed=True)
        breaker.refresh()
        assert not await breaker.allow_async(A)
        await anyio.sleep(0.25)
        assert await breaker.allow_async(A)
        assert not await breaker.allow_async(A)


def test_breaker_falls_back_when_redis_hangs(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    breaker = RedisCircuitBreaker(
        redis_server.url, name=name(), timeout=0.2, retry_interval=5, clock=clock, refresh=600
    )
    assert breaker.allow(A)
    redis_server.pause()
    try:
        with caplog.at_level(logging.WARNING, logger="mcp_safe_retry"):
            for _ in range(5):
                breaker.record(A, failed=True)
            breaker.refresh()  # one timeout, then local
            assert not breaker.allow(A)  # the local breaker tripped on the same outcomes
    finally:
        redis_server.resume()
    assert len([r for r in caplog.records if "unreachable" in r.message]) == 1
    clock.now += 5
    breaker.refresh()  # the outcomes kept while Redis hung are sent now
    assert breaker.state(A) is CircuitState.OPEN and not breaker.allow(A)
    breaker.close()


_STEPS = st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=30)


@settings(max_examples=25, deadline=None)
@given(steps=_STEPS)
def test_the_lua_breaker_follows_the_local_one(steps: list[tuple[bool, bool]]) -> None:
    binary = redis_server_binary()
    assert binary is not None
    server = _SHARED_SERVER.get(binary)
    kwargs = {"failure_threshold": 4, "min_calls": 6, "failure_ratio": 0.6, "open_for": 60}
    local = CircuitBreaker(**kwargs)  # type: ignore[arg-type]
    shared = RedisCircuitBreaker(server.url, name=name(), refresh=600, **kwargs)  # type: ignore[arg-type]
    for failed, ends_call in steps:  # attempts, some of them followed by a retry
        local.record(A, failed=failed, ends_call=ends_call)
        shared.record(A, failed=failed, ends_call=ends_call)
        shared.refresh()
        assert shared.state(A) is local.state(A)
    shared.close()


def test_a_batch_counts_calls_for_the_ratio_and_attempts_for_the_run(
    redis_server: RedisServer,
) -> None:
    """The background thread sends what was recorded since its last send in one script."""
    kwargs = {"failure_threshold": 5, "min_calls": 10, "failure_ratio": 0.5}
    rescued = RedisCircuitBreaker(redis_server.url, name=name(), refresh=600, **kwargs)  # type: ignore[arg-type]
    assert rescued.allow(A)
    for _ in range(40):  # each call: a failed attempt, then its retry's success
        rescued.record(A, failed=True, ends_call=False)
        rescued.record(A, failed=False)
    rescued.refresh()
    assert rescued.state(A) is CircuitState.CLOSED
    failing = RedisCircuitBreaker(redis_server.url, name=name(), refresh=600, **kwargs)  # type: ignore[arg-type]
    assert failing.allow(A)
    for i in range(10):  # 10 calls, half of them failed after a failed attempt each
        failing.record(A, failed=i % 2 == 1, ends_call=False)
        failing.record(A, failed=i % 2 == 1)
    failing.refresh()
    other = RedisCircuitBreaker(redis_server.url, name=failing.name, refresh=600)
    assert not other.allow(A)  # what Redis holds: open
    for breaker in (rescued, failing, other):
        breaker.close()


class _Shared:
    """One server for every Hypothesis example of a test (started on first use)."""

    def __init__(self) -> None:
        self.server: RedisServer | None = None

    def get(self, binary: str) -> RedisServer:
        if self.server is None:
            self.server = RedisServer(binary)
            self.server.start()
        return self.server


_SHARED_SERVER = _Shared()


@pytest.fixture(autouse=True, scope="module")
def _stop_shared_server() -> Iterator[None]:
    yield
    if _SHARED_SERVER.server is not None:
        _SHARED_SERVER.server.close()
