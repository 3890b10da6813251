"""What the breaker counts, through real transports (issue 19): a failure that the call's own
retry rescued never opens a circuit, a server that is down still opens it within
``failure_threshold`` failed attempts, a process started while a shared circuit is open sends
nothing, and a budget token for a retry or a hedge that the breaker held back goes back.

The servers are real ones on 127.0.0.1 (a stdlib HTTP server in a thread, counting POSTs);
Redis is a real redis-server started by the test; the breakers run with their defaults.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import httpx
import pytest
import redis

from mcp_safe_retry import (
    AsyncRetryTransport,
    Breaker,
    CircuitBreaker,
    CircuitOpenError,
    RetryBudget,
    RetryPolicy,
    RetryTransport,
    get_record,
)
from mcp_safe_retry.core.breaker import CircuitState, server_key
from mcp_safe_retry.redis import RedisBudget, RedisCircuitBreaker
from tests.fleet_support import BreakerFleet
from tests.helpers import Script, ok_result, status_reply, tool_call
from tests.redis_support import RedisServer
from tests.shells.test_race_httpx_async import URL, inner_of, ok, unavailable

READ = RetryPolicy(tools={"lookup": "read"})
FRESH_ID = "mcp-safe-retry-"  # the prefix of the id a retry is sent under


class _Flaky(BaseHTTPRequestHandler):
    """503 to the first POST of every call (sent under the caller's id), the answer to its
    retry (sent under a fresh id); 503 to everything while ``down``."""

    protocol_version = "HTTP/1.1"
    down = False
    posts = 0
    lock = threading.Lock()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        with _Flaky.lock:
            _Flaky.posts += 1
        request_id = body.get("id")
        if _Flaky.down or not str(request_id).startswith(FRESH_ID):
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        out = json.dumps(ok_result(request_id)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture
def flaky() -> Iterator[str]:
    """The URL of a real server on loopback that fails each call's first POST once."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    _Flaky.posts, _Flaky.down = 0, False
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


Outcome = tuple[str, int]  # ("200" / "503" / "circuit_open", POSTs the call's record counts)


async def _no_sleep(_: float) -> None:
    return None


def calls(mode: str, url: str, breaker: Breaker, n: int, **options: Any) -> list[Outcome]:
    """``n`` READ calls in turn through a ``mode`` ("sync", "async") transport."""
    messages = [tool_call("lookup", i) for i in range(n)]

    def ended(response: httpx.Response) -> Outcome:
        record = get_record(response)
        return str(response.status_code), record.post_count if record else -1

    def held(exc: CircuitOpenError) -> Outcome:
        record = get_record(exc)
        return "circuit_open", record.post_count if record else -1

    out: list[Outcome] = []
    if mode == "sync":
        transport = RetryTransport(
            httpx.HTTPTransport(), policy=READ, breaker=breaker, sleep=lambda _: None, **options
        )
        with httpx.Client(transport=transport, timeout=10) as client:
            for message in messages:
                try:
                    out.append(ended(client.post(url, json=message)))
                except CircuitOpenError as exc:
                    out.append(held(exc))
        return out

    async def run() -> None:
        transport = AsyncRetryTransport(
            httpx.AsyncHTTPTransport(), policy=READ, breaker=breaker, sleep=_no_sleep, **options
        )
        async with httpx.AsyncClient(transport=transport, timeout=10) as client:
            for message in messages:
                try:
                    out.append(ended(await client.post(url, json=message)))
                except CircuitOpenError as exc:
                    out.append(held(exc))

    anyio.run(run)
    return out


BreakerOf = Callable[[RedisServer | None], Breaker]


def _local(_: RedisServer | None) -> Breaker:
    return CircuitBreaker()


def _shared(server: RedisServer | None) -> Breaker:
    assert server is not None
    return RedisCircuitBreaker(server.url, name=f"calls-{uuid.uuid4().hex[:8]}")


BREAKERS = [
    pytest.param(_local, False, id="CircuitBreaker"),
    pytest.param(_shared, True, id="RedisCircuitBreaker"),
]
MODES = [pytest.param("sync", id="sync"), pytest.param("async", id="async")]


@pytest.fixture
def maybe_redis(request: pytest.FixtureRequest) -> Iterator[RedisServer | None]:
    if not request.node.callspec.params.get("needs_redis"):
        yield None
        return
    yield request.getfixturevalue("redis_server")


def _close(breaker: Breaker) -> None:
    if isinstance(breaker, RedisCircuitBreaker):
        breaker.close()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("make", "needs_redis"), BREAKERS)
def test_failures_that_every_retry_rescued_never_open_the_default_breaker(
    flaky: str, maybe_redis: RedisServer | None, mode: str, make: BreakerOf, needs_redis: bool
) -> None:
    breaker = make(maybe_redis)
    try:
        outcomes = calls(mode, flaky, breaker, 40)
        state = breaker.state(server_key(flaky))  # type: ignore[attr-defined]
    finally:
        _close(breaker)
    # Before issue 19: 10 succeeded, 30 ended in CircuitOpenError.
    assert outcomes == [("200", 2)] * 40
    assert _Flaky.posts == 80 and state is CircuitState.CLOSED


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("make", "needs_redis"), BREAKERS)
def test_a_server_that_is_down_opens_it_within_failure_threshold_failed_attempts(
    flaky: str, maybe_redis: RedisServer | None, mode: str, make: BreakerOf, needs_redis: bool
) -> None:
    _Flaky.down = True
    breaker = make(maybe_redis)
    try:
        outcomes = calls(mode, flaky, breaker, 4)
    finally:
        _close(breaker)
    # 5 failed attempts (a call's 3, the next one's 2), then its second retry is held back.
    assert outcomes == [("503", 3), ("circuit_open", 2), ("circuit_open", 0), ("circuit_open", 0)]
    assert _Flaky.posts == 5


# -- a retry or a hedge held back gives its token back ---------------------------------


class _Tokens:
    """A local ``RetryBudget`` or a ``RedisBudget``, and its token count now."""

    def __init__(self, server: RedisServer | None) -> None:
        self.budget: RetryBudget | RedisBudget
        if server is None:
            self.budget = RetryBudget()
        else:
            self.budget = RedisBudget(server.url, name=f"calls-{uuid.uuid4().hex[:8]}")

    def count(self) -> float:
        budget = self.budget
        if isinstance(budget, RedisBudget):
            budget.flush()  # what this process counted, sent (one atomic script)
            tokens = budget.tokens
            assert tokens is not None
            return tokens
        return budget.tokens

    def close(self) -> None:
        if isinstance(self.budget, RedisBudget):
            self.budget.close()


BUDGETS = [
    pytest.param(False, id="RetryBudget"),
    pytest.param(True, id="RedisBudget"),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("needs_redis", BUDGETS)
def test_a_retry_the_breaker_held_back_gives_its_budget_token_back(
    maybe_redis: RedisServer | None, mode: str, needs_redis: bool
) -> None:
    tokens = _Tokens(maybe_redis)
    script = Script(status_reply(503))
    breaker = CircuitBreaker(failure_threshold=2)
    try:
        before = tokens.count()
        options = {"policy": READ, "breaker": breaker, "budget": tokens.budget}
        if mode == "sync":
            transport: Any = RetryTransport(script, sleep=lambda _: None, **options)
            with pytest.raises(CircuitOpenError) as info:
                httpx.Client(transport=transport).post("http://a.test/mcp", json=tool_call())
        else:

            async def run() -> None:
                transport = AsyncRetryTransport(script, sleep=_no_sleep, **options)
                async with httpx.AsyncClient(transport=transport) as client:
                    await client.post("http://a.test/mcp", json=tool_call())

            with pytest.raises(CircuitOpenError) as info:
                anyio.run(run)
        after = tokens.count()
    finally:
        tokens.close()
    record = get_record(info.value)
    assert record is not None and record.post_count == 2  # the second retry was held back
    assert len(script.requests) == 2
    # One retry sent, one token spent: the held-back retry's token came back.
    assert after == pytest.approx(before - 1)


@pytest.mark.anyio
@pytest.mark.parametrize("needs_redis", BUDGETS)
async def test_a_hedge_the_breaker_held_back_gives_its_budget_token_back(
    maybe_redis: RedisServer | None, needs_redis: bool
) -> None:
    tokens = _Tokens(maybe_redis)
    # The first copy answers late; every hedge fails at once: the first hedge's 503 opens
    # the circuit (threshold 1), the second hedge is held back, no more follow.
    inner = inner_of(httpx, (0.3, ok), (0.0, unavailable))
    policy = RetryPolicy(tools={"lookup": "read"}, hedge_after=0.02, max_hedges=3)
    breaker = CircuitBreaker(failure_threshold=1)
    try:
        before = await anyio.to_thread.run_sync(tokens.count)
        transport = AsyncRetryTransport(inner, policy=policy, breaker=breaker, budget=tokens.budget)
        async with httpx.AsyncClient(transport=transport) as client:
            response = await client.post(URL, json=tool_call("lookup", 7))
            await response.aread()
        after = await anyio.to_thread.run_sync(tokens.count)
    finally:
        await anyio.to_thread.run_sync(tokens.close)
    assert response.status_code == 200 and len(inner.calls) == 2
    # One hedge sent (a token), the winner's success (+0.2 of one); the hedge held back
    # took its token and gave it back (before issue 19: before - 1.8).
    assert after == pytest.approx(before - 1 + 0.2)


# -- a process started while the shared circuit is open ------------------------------------


def test_a_process_started_after_the_shared_circuit_opened_sends_nothing(
    redis_server: RedisServer,
) -> None:
    with BreakerFleet(redis_server.url, workers=1, open_for=60) as fleet:
        assert fleet.call(0) == ("200", 1)
        fleet.down = True
        assert [fleet.call(0)[0] for _ in range(5)] == ["503"] * 5  # 5 failed attempts...
        assert fleet.call(0) == ("circuit_open", 0)  # ...open it, here at once
        probe = RedisCircuitBreaker(redis_server.url, name=fleet.name)
        key = probe.redis_key(server_key(fleet.url))
        client = redis.Redis.from_url(redis_server.url)
        deadline = time.monotonic() + 10
        while client.hget(key, "s") != b"1":  # worker 0 told Redis (its background thread)
            assert time.monotonic() < deadline, "the trip never reached Redis"
            time.sleep(0.01)
        client.close()
        sent = fleet.posts
        late = fleet.spawn()  # a process that joins now: it has read nothing yet
        # Before issue 19 its first calls went out until its background refresh landed.
        assert [fleet.call(late) for _ in range(5)] == [("circuit_open", 0)] * 5
        assert fleet.posts == sent
