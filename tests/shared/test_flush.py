"""Fleet state reaches Redis before the process that made it ends (issue 31), against a real
redis-server and a real server on 127.0.0.1 (uvicorn, 503 to every POST): a worker process
whose breaker opened closes only its client and ends, and a second worker started right
after sends nothing, 20 runs of 20, sync and async; a worker killed with SIGKILL right after
its breaker opened (what README says it may lose); closing and exiting never wait on Redis
longer than the link's timeout, with Redis stopped (SIGSTOP) or a socket that never answers;
all four transports flush as they close; a forked child never sends its parent's outcomes."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import redis

import mcp_safe_retry.httpx2 as x2
from mcp_safe_retry import AsyncRetryTransport, RetryTransport
from mcp_safe_retry.redis import RedisBudget, RedisCircuitBreaker
from tests.redis_support import RedisServer
from tests.serving import Served, bind_loopback
from tests.shared.common import A, name, round_trips

ROOT = Path(__file__).resolve().parents[2]
RUNS = 20
TIMEOUT = 0.25  # the link's timeout (RedisCircuitBreaker's default)
SLACK = 0.2  # a loaded 2-core machine's scheduling, below a second timeout


class Down:
    """An ASGI app that answers 503 to every POST, counting them by query string."""

    def __init__(self) -> None:
        self.posts: collections.Counter[str] = collections.Counter()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        if scope["method"] == "POST":
            self.posts[scope["query_string"].decode()] += 1
        await send({"type": "http.response.start", "status": 503, "headers": []})
        await send({"type": "http.response.body", "body": b""})


@pytest.fixture(scope="module")
def down() -> Iterator[tuple[Served, Down]]:
    app = Down()
    with Served(app) as served:
        yield served, app


class Workers:
    """Worker processes (tests/shared/flush_worker.py), two started ahead of their use, so
    that their imports do not slow the runs down; each is stopped here, by its handle."""

    def __init__(self) -> None:
        self._ready: collections.deque[subprocess.Popen[str]] = collections.deque()
        self._all: list[subprocess.Popen[str]] = []

    def _spawn(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.shared.flush_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
        )
        self._ready.append(process)
        self._all.append(process)

    def run(self, job: dict[str, Any]) -> tuple[list[str], int]:
        """One worker does ``job``: how its calls ended, and its exit status."""
        while len(self._ready) < 3:
            self._spawn()
        process = self._ready.popleft()
        assert process.stdin is not None and process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        process.stdin.write(json.dumps(job) + "\n")
        process.stdin.flush()
        line = process.stdout.readline()
        returncode = process.wait(30)
        return json.loads(line), returncode

    def close(self) -> None:
        for process in self._all:
            if process.poll() is None:
                process.kill()
                process.wait(10)


@pytest.fixture
def workers() -> Iterator[Workers]:
    pool = Workers()
    try:
        yield pool
    finally:
        pool.close()


def two_workers(
    workers: Workers, redis_url: str, served: Served, app: Down, mode: str, *, kill: bool
) -> tuple[list[str], int, int]:
    """The first worker's calls and exit status, and the POSTs the second one sent."""
    run = name()
    job = {"mode": mode, "redis": redis_url, "name": run, "timeout": TIMEOUT, "kill": kill}
    first, status = workers.run({**job, "url": served.url(f"/mcp?{run}-1"), "calls": 20})
    second, _ = workers.run({**job, "url": served.url(f"/mcp?{run}-2"), "calls": 5, "kill": False})
    assert second == ["CircuitOpenError"] * 5 or app.posts[f"{run}-2"] > 0
    return first, status, app.posts[f"{run}-2"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_worker_that_only_closes_its_client_leaves_its_trip_in_redis(
    redis_server: RedisServer, down: tuple[Served, Down], workers: Workers, mode: str
) -> None:
    served, app = down
    started = time.monotonic()
    sent = []
    for _ in range(RUNS):
        first, status, posts = two_workers(workers, redis_server.url, served, app, mode, kill=False)
        assert status == 0 and "CircuitOpenError" in first, first
        sent.append(posts)
    elapsed = time.monotonic() - started
    print(f"{mode}: {RUNS} runs in {elapsed:.1f} s; second worker's POSTs: {sent}")
    assert sent == [0] * RUNS


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_worker_killed_right_after_its_breaker_opened(
    redis_server: RedisServer, down: tuple[Served, Down], workers: Workers, mode: str
) -> None:
    """README (Fleet): the trip is sent before the call that made it ends (sync), or at
    once by the background thread (async): a SIGKILL right after it still leaves it in
    Redis, and the second worker sends nothing."""
    served, app = down
    sent = []
    for _ in range(RUNS):
        first, status, posts = two_workers(workers, redis_server.url, served, app, mode, kill=True)
        assert status == -9 and first, first  # killed by SIGKILL, after at least one call
        sent.append(posts)
    print(f"{mode}, SIGKILL: second worker's POSTs: {sent}")
    assert sent == [0] * RUNS


# -- never waiting longer than the link's timeout -----------------------------------------


@pytest.fixture
def silent() -> Iterator[str]:
    """A redis:// URL of a socket that accepts connections and never answers."""
    sock = bind_loopback()
    sock.listen(16)
    try:
        yield f"redis://127.0.0.1:{sock.getsockname()[1]}/0"
    finally:
        sock.close()


def timed(action: Callable[[], object]) -> float:
    started = time.monotonic()
    action()
    return time.monotonic() - started


def test_a_trip_and_a_close_wait_at_most_the_timeout_for_a_redis_that_never_answers(
    silent: str,
) -> None:
    breaker = RedisCircuitBreaker(silent, name=name(), timeout=TIMEOUT, retry_interval=0)
    budget = RedisBudget(silent, name=name(), timeout=TIMEOUT, retry_interval=0)
    transport = RetryTransport(budget=budget, breaker=breaker)
    assert transport.engine.shared == (budget, breaker)
    breaker.allow(A)  # one timeout: A is watched from now on
    waits = [timed(lambda: breaker.record(A, failed=True)) for _ in range(5)]
    budget.record(failed=False)
    breaker.record(A, failed=True)
    # Within one timeout, with room for a loaded machine's scheduling (two would be 0.5 s).
    assert max(waits) < TIMEOUT + SLACK, waits  # the trip (the 5th) waited for its send
    closing = timed(transport.close)
    print(f"record: {max(waits):.3f} s at most; close: {closing:.3f} s (timeout {TIMEOUT})")
    assert closing < TIMEOUT + SLACK  # both started at once: about one timeout in all
    breaker.close()
    budget.close()


EXITING = """
import sys, time
from mcp_safe_retry.redis import RedisBudget, RedisCircuitBreaker
breaker = RedisCircuitBreaker(sys.argv[1], name="exit", timeout={timeout}, retry_interval=0)
budget = RedisBudget(sys.argv[1], name="exit", timeout={timeout}, retry_interval=0)
for _ in range(3):
    breaker.record("http://a.test/mcp", failed=True)
budget.record(failed=False)
time.sleep({timeout} * 3)  # the background sends under way are stuck meanwhile
breaker.record("http://a.test/mcp", failed=True)
print("done", flush=True)
"""


def test_an_exiting_process_waits_at_most_the_timeout_for_a_stopped_redis(
    redis_server: RedisServer,
) -> None:
    timeout = 0.5
    redis_server.pause()  # SIGSTOP: connections accepted, nothing answered
    try:
        process = subprocess.Popen(
            [sys.executable, "-c", EXITING.format(timeout=timeout), redis_server.url],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "done"
        exiting = timed(lambda: process.wait(30))
    finally:
        redis_server.resume()
    print(f"exit: {exiting:.3f} s (timeout {timeout})")
    assert process.returncode == 0
    assert exiting < timeout + 0.3


# -- every transport flushes as it closes -------------------------------------------------


def _ok(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200)


CLOSINGS = [
    ("httpx sync close", RetryTransport, "close"),
    ("httpx sync exit", RetryTransport, "__exit__"),
    ("httpx async aclose", AsyncRetryTransport, "aclose"),
    ("httpx async exit", AsyncRetryTransport, "__aexit__"),
    ("httpx2 sync close", x2.RetryTransport, "close"),
    ("httpx2 sync exit", x2.RetryTransport, "__exit__"),
    ("httpx2 async aclose", x2.AsyncRetryTransport, "aclose"),
    ("httpx2 async exit", x2.AsyncRetryTransport, "__aexit__"),
]


@pytest.mark.parametrize(("what", "shell", "closing"), CLOSINGS, ids=[c[0] for c in CLOSINGS])
def test_every_transport_flushes_its_shared_objects_as_it_closes(
    redis_server: RedisServer, client: redis.Redis, what: str, shell: Any, closing: str
) -> None:
    # Intervals of 10 minutes: only a flush sends what is counted here.
    breaker = RedisCircuitBreaker(redis_server.url, name=name(), refresh=600)
    budget = RedisBudget(redis_server.url, name=name(), flush_interval=600, burst=10)
    assert breaker.allow(A) and budget.allow_retry()  # known circuit; 9 tokens left
    breaker.record(A, failed=False)  # a plain count: batched
    for _ in range(5):
        budget.record(failed=False)  # one token earned back: batched
    before = round_trips(client)
    transport = shell(budget=budget, breaker=breaker)
    method = getattr(transport, closing)
    if closing.startswith("a") or closing == "__aexit__":
        anyio.run(method)
    else:
        method()
    assert budget.tokens == 10  # the credit reached Redis
    assert round_trips(client) >= before + 2  # the breaker's outcomes were sent too
    assert breaker.flush() is None  # nothing pending: returns at once
    assert breaker.allow(A)  # neither was closed
    breaker.close()
    budget.close()


# -- a forked child -----------------------------------------------------------------------


def test_a_forked_child_sends_its_own_outcomes_never_its_parents(
    redis_server: RedisServer, client: redis.Redis
) -> None:
    breaker = RedisCircuitBreaker(redis_server.url, name=name(), failure_threshold=100)
    assert breaker.allow(A)
    with breaker._refreshing:  # the background thread is in the middle of a round
        for _ in range(3):
            breaker.record(A, failed=True)  # pending: the round cannot take them
        pid = os.fork()
        if pid == 0:  # the child: its own lock, no pending outcomes of its parent's
            breaker.record(A, failed=True)
            breaker.flush(5.0)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
    assert status == 0
    breaker.flush(5.0)
    assert int(client.hget(breaker.redis_key(A), "c") or 0) == 4  # 3 here, 1 there
    breaker.close()
