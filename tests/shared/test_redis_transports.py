"""A Redis budget and breaker under transports while Redis is killed or hung (SIGSTOP):
every call ends with a record, fast; nothing from Redis reaches a caller; an async shell
never blocks its event loop on Redis (a ticker task measures the loop's longest stall)."""

from __future__ import annotations

import itertools
import time
import uuid
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import httpx
import pytest

from mcp_safe_retry import AsyncRetryTransport, RetryTransport, get_record
from mcp_safe_retry.redis import RedisBudget, RedisCircuitBreaker
from tests.helpers import Script, json_reply, ok_result, rpc, status_reply
from tests.redis_support import RedisServer

A = "http://a.test/mcp"
TIMEOUT = 0.2  # the Redis socket timeout
CALLS = 40


def flaky() -> Script:
    """Every other POST answered 503 (each call retries once: a budget round trip), and a
    run of 503s early on that opens the circuit (then probes: breaker round trips)."""
    counter = itertools.count()
    ok = json_reply(body=ok_result)

    def reply(request: dict[str, Any]) -> httpx.Response:
        n = next(counter)
        return status_reply(503) if n % 2 == 0 or 8 <= n < 12 else ok(request)

    return Script(reply)


def shared(url: str) -> tuple[RedisBudget, RedisCircuitBreaker]:
    name = f"t-{uuid.uuid4().hex[:8]}"
    budget = RedisBudget(url, name=name, burst=20, timeout=TIMEOUT, retry_interval=60)
    breaker = RedisCircuitBreaker(
        url,
        name=name,
        timeout=TIMEOUT,
        retry_interval=60,
        refresh=0.05,
        open_for=0.05,
        failure_threshold=3,
        failure_ratio=0.9,
    )
    return budget, breaker


async def no_sleep(_: float) -> None:
    await anyio.lowlevel.checkpoint()


def take_away(server: RedisServer, failure: str) -> None:
    server.kill() if failure == "kill" else server.pause()


@pytest.mark.anyio
@pytest.mark.parametrize("failure", ["kill", "pause"])
async def test_async_calls_finish_and_the_loop_never_stalls_when_redis_goes_away(
    redis_server: RedisServer, failure: str
) -> None:
    budget, breaker = shared(redis_server.url)
    transport = AsyncRetryTransport(
        flaky(), budget=budget, breaker=breaker, contain_failures=True, sleep=no_sleep
    )
    stall = 0.0
    durations: list[float] = []
    responses = []

    async def tick() -> None:
        nonlocal stall
        last = time.monotonic()
        while True:
            await anyio.sleep(0.005)
            now = time.monotonic()
            stall = max(stall, now - last)
            last = now

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(tick)
            async with httpx.AsyncClient(transport=transport) as client:
                for i in range(CALLS):
                    if i == 10:
                        take_away(redis_server, failure)
                    started = time.monotonic()
                    with anyio.fail_after(10):  # a hang fails here instead of never ending
                        responses.append(await client.post(A, json=rpc("tools/list", id=i)))
                    durations.append(time.monotonic() - started)
                    await anyio.sleep(0.01)  # an open circuit's time passes: probes go
            tg.cancel_scope.cancel()
    finally:
        if failure == "pause":
            redis_server.resume()
        await anyio.to_thread.run_sync(budget.close)
        await anyio.to_thread.run_sync(breaker.close)
    records = [get_record(r) for r in responses]
    assert len(records) == CALLS and all(r is not None and r.complete for r in records)
    # a call waits on Redis at most for an admission and two budget answers, each bounded
    assert max(durations) < 4 * TIMEOUT + 0.5
    assert stall < TIMEOUT  # no Redis round trip ever ran on the event loop


@pytest.mark.parametrize("failure", ["kill", "pause"])
def test_sync_calls_finish_within_the_timeout_when_redis_goes_away(
    redis_server: RedisServer, failure: str
) -> None:
    budget, breaker = shared(redis_server.url)
    transport = RetryTransport(
        flaky(), budget=budget, breaker=breaker, sleep=lambda _: None, contain_failures=True
    )
    durations = []
    responses = []
    try:
        with httpx.Client(transport=transport) as client:
            for i in range(CALLS):
                if i == 10:
                    take_away(redis_server, failure)
                started = time.monotonic()
                responses.append(client.post(A, json=rpc("tools/list", id=i)))
                durations.append(time.monotonic() - started)
                time.sleep(0.01)  # an open circuit's time passes: probes go
    finally:
        if failure == "pause":
            redis_server.resume()
        budget.close()
        breaker.close()
    records = [get_record(r) for r in responses]
    assert len(records) == CALLS and all(r is not None and r.complete for r in records)
    assert max(durations) < 4 * TIMEOUT + 0.5
