"""How soon a trip reaches Redis, and what a flush costs: ``python -m benchmarks.flush``.

A real redis-server is started here. Each trip is a fresh ``RedisCircuitBreaker`` name
(``failure_threshold=5``, background interval 10 minutes, so only a wake or a flush sends):
its first check reads Redis, four failures are recorded, then the fifth, which trips it, is
timed, and Redis is read at once when ``record()`` returns, then polled until the circuit
shows open there. Two ways, interleaved in the same run:

- ``woken`` (the baseline: every trip before issue 31, and an async transport's trip now):
  the fifth failure recorded on an event loop, which wakes the background thread and does
  not wait for it;
- ``sent at once`` (a sync transport's trip now): recorded off an event loop, ``record()``
  waits (at most the link's timeout) for the background thread to send it.

Then what a transport's ``close()`` costs with outcomes pending (one round trip) and with
none, beside a transport with no shared breaker.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.redis_support

from mcp_safe_retry import RetryTransport  # noqa: E402
from mcp_safe_retry.redis import RedisCircuitBreaker  # noqa: E402
from tests.redis_support import RedisServer, redis_server_binary  # noqa: E402

A = "http://a.test/mcp"


def _trip(url: str, client: redis.Redis, *, on_loop: bool) -> tuple[float, bool, float]:
    """The fifth failure's ``record()`` time, whether the trip was in Redis when it
    returned, and the time from its start until Redis showed it (seconds)."""
    breaker = RedisCircuitBreaker(url, name=f"b-{uuid.uuid4().hex[:8]}", refresh=600)
    key = breaker.redis_key(A)
    breaker.allow(A)
    for _ in range(4):
        breaker.record(A, failed=True)
    breaker.flush(1.0)

    def fifth() -> tuple[float, bool, float]:
        started = time.perf_counter()
        breaker.record(A, failed=True)
        returned = time.perf_counter()
        visible = client.hget(key, "s") == b"1"
        while client.hget(key, "s") != b"1":
            if time.perf_counter() - started > 5:
                raise RuntimeError("the trip never reached Redis")
        return returned - started, visible, time.perf_counter() - started

    async def on_event_loop() -> tuple[float, bool, float]:
        return fifth()

    measured = asyncio.run(on_event_loop()) if on_loop else fifth()
    breaker.close()
    return measured


def _close(url: str, *, shared: bool, pending: bool) -> float:
    breaker = RedisCircuitBreaker(url, name=f"c-{uuid.uuid4().hex[:8]}", refresh=600)
    transport = RetryTransport(breaker=breaker if shared else None)
    breaker.allow(A)
    if pending:
        breaker.record(A, failed=False)  # a plain count: batched, sent by the flush
    started = time.perf_counter()
    transport.close()
    elapsed = time.perf_counter() - started
    breaker.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trips", type=int, default=200, help="trips per way")
    args = parser.parse_args()
    binary = redis_server_binary()
    if binary is None:
        raise SystemExit("no redis-server (see tests/redis_support.py)")
    server = RedisServer(binary)
    server.start()
    try:
        with redis.Redis.from_url(server.url) as client:
            ways = {"woken": True, "sent at once": False}
            trips: dict[str, list[tuple[float, bool, float]]] = {w: [] for w in ways}
            for _ in range(args.trips):
                for way, on_loop in ways.items():
                    trips[way].append(_trip(server.url, client, on_loop=on_loop))
            closes = {
                "no shared breaker": [],
                "shared breaker, nothing pending": [],
                "shared breaker, an outcome pending": [],
            }
            for _ in range(args.trips):
                closes["no shared breaker"].append(_close(server.url, shared=False, pending=False))
                closes["shared breaker, nothing pending"].append(
                    _close(server.url, shared=True, pending=False)
                )
                closes["shared breaker, an outcome pending"].append(
                    _close(server.url, shared=True, pending=True)
                )
    finally:
        server.close()
    us = 1e6
    base = statistics.median(t[2] for t in trips["woken"])
    print(f"{args.trips} trips per way, interleaved; medians (p90) in microseconds")
    print("| way | record() of the trip | in Redis when it returned | trip to Redis | ratio |")
    print("| --- | --- | --- | --- | --- |")
    for way, got in trips.items():
        rec = [t[0] * us for t in got]
        vis = [t[2] * us for t in got]
        seen = sum(t[1] for t in got)
        p90 = statistics.quantiles(vis, n=10)[-1]
        ratio = statistics.median(vis) / (base * us)
        print(
            f"| {way} | {statistics.median(rec):.0f} | {seen} of {len(got)} | "
            f"{statistics.median(vis):.0f} ({p90:.0f}) | x{ratio:.2f} |"
        )
    print("| transport close() | median µs |")
    print("| --- | --- |")
    for what, got in closes.items():
        print(f"| {what} | {statistics.median(got) * us:.0f} |")


if __name__ == "__main__":
    main()
