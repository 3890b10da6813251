"""A fleet in an outage, with and without a shared budget: ``python -m benchmarks.fleet``.

Four worker processes, each with its own sync ``RetryTransport`` (default policy: at most 2
retries; ``lookup`` marked READ) over a real loopback HTTP server that answers 503 to every
POST, send 250 calls each. In the ``shared`` mode every worker's budget is a ``RedisBudget``
of one name on a real redis-server started here; in the ``local`` mode each has its own
``RetryBudget``. The server counts the POSTs. Rounds alternate between the modes.

Then the added cost of the Redis budget per call: ``record()`` (the success path: no round
trip) and ``allow_retry()`` (the retry path: one round trip), beside the local budget's; and
the added cost per call through a transport with a ``RedisBudget`` and a
``RedisCircuitBreaker`` (success path, retry path), beside one with neither.

The fleets themselves (``run_fleet``, and ``BreakerFleet`` for the fleet breaker's tests)
live in ``tests/fleet_support.py``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.redis_support and tests.fleet_support

from mcp_safe_retry import (  # noqa: E402
    AsyncRetryTransport,
    CircuitBreaker,
    RetryBudget,
    RetryTransport,
)
from mcp_safe_retry.redis import RedisBudget, RedisCircuitBreaker  # noqa: E402
from tests.fleet_support import POLICY, run_fleet  # noqa: E402
from tests.redis_support import RedisServer, redis_server_binary  # noqa: E402


def _per_call(work: Any, n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        work()
    return (time.perf_counter() - started) / n * 1e6


def costs(redis_url: str, rounds: int) -> dict[str, float]:
    """Median microseconds per budget call, local and on Redis, interleaved rounds."""
    local = RetryBudget(burst=1e12)
    shared = RedisBudget(redis_url, name=f"cost-{uuid.uuid4().hex[:8]}", burst=1e12)
    shared.allow_retry()  # connect and load the script
    key = "http://127.0.0.1:9/mcp"
    local_breaker = CircuitBreaker()
    shared_breaker = RedisCircuitBreaker(redis_url, name=f"cost-{uuid.uuid4().hex[:8]}")
    shared_breaker.allow(key)

    def local_pass() -> None:  # what a transport asks and tells per successful attempt
        local_breaker.allow(key)
        local_breaker.record(key, failed=False)

    def shared_pass() -> None:
        shared_breaker.allow(key)
        shared_breaker.record(key, failed=False)

    cells: dict[str, list[float]] = {k: [] for k in ("local-record", "redis-record")}
    cells |= {"local-allow": [], "redis-allow": []}
    cells |= {"local-breaker": [], "redis-breaker": []}
    for _ in range(rounds):
        cells["local-breaker"].append(_per_call(local_pass, 20000))
        cells["redis-breaker"].append(_per_call(shared_pass, 20000))
        cells["local-record"].append(_per_call(lambda: local.record(failed=False), 20000))
        cells["redis-record"].append(_per_call(lambda: shared.record(failed=False), 20000))
        cells["local-allow"].append(_per_call(local.allow_retry, 2000))
        cells["redis-allow"].append(_per_call(shared.allow_retry, 500))
    shared.close()
    shared_breaker.close()
    return {k: round(statistics.median(v), 3) for k, v in cells.items()}


class _Alternating(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """An inner transport answering 503 and a JSON result in turn (``every``: 1 answers
    every request)."""

    def __init__(self, every: int) -> None:
        from benchmarks._payloads import JSON_HEADERS, json_response

        self._ok = (JSON_HEADERS, json_response(256))
        self._every = every
        self._n = 0

    def _answer(self) -> httpx.Response:
        self._n += 1
        if self._every > 1 and self._n % self._every:
            return httpx.Response(503)
        headers, body = self._ok
        return httpx.Response(200, headers=headers, content=body)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._answer()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return self._answer()


_CALL = json.dumps(
    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "lookup"}}
).encode()


def _transport_cell(mode: str, path: str, shared: tuple[Any, Any] | None, n: int) -> float:
    """Microseconds per call through a transport: ``path`` "success" (one POST) or "retry"
    (a 503, then the answer: one budget consult); ``shared``: a Redis budget and breaker."""
    options: dict[str, Any] = {"policy": POLICY}
    if shared is not None:
        options["budget"], options["breaker"] = shared
    inner = _Alternating(1 if path == "success" else 2)
    headers = {"content-type": "application/json"}

    def request() -> httpx.Request:
        return httpx.Request("POST", "http://127.0.0.1:9/mcp", headers=headers, content=_CALL)

    if mode == "sync":
        sync = RetryTransport(inner, sleep=lambda _: None, **options)
        started = time.perf_counter()
        for _ in range(n):
            sync.handle_request(request()).read()
        return (time.perf_counter() - started) / n * 1e6

    import anyio

    async def no_sleep(_: float) -> None:
        return None

    transport = AsyncRetryTransport(inner, sleep=no_sleep, **options)

    async def run() -> float:
        started = time.perf_counter()
        for _ in range(n):
            await (await transport.handle_async_request(request())).aread()
        return (time.perf_counter() - started) / n * 1e6

    return anyio.run(run)


def transport_costs(redis_url: str, rounds: int) -> dict[str, float]:
    """Median microseconds per call through sync and async transports with a ``RedisBudget``
    and a ``RedisCircuitBreaker``, beside the same transports with neither (a local budget,
    no breaker); success path and retry path; interleaved rounds."""
    name = f"cost-{uuid.uuid4().hex[:8]}"
    budget = RedisBudget(redis_url, name=name, burst=1e12)
    breaker = RedisCircuitBreaker(redis_url, name=name)
    cells: dict[str, list[float]] = {}
    sizes = {"success": 400, "retry": 100}  # small cells, many rounds: the noise averages out
    for mode in ("sync", "async"):  # warm up: connect, load the scripts
        for path in sizes:
            _transport_cell(mode, path, (budget, breaker), 50)
    for _ in range(rounds):
        for mode in ("sync", "async"):
            for path, n in sizes.items():
                for label, shared in (("none", None), ("redis", (budget, breaker))):
                    cell = f"{mode}-{path}-{label}"
                    cells.setdefault(cell, []).append(_transport_cell(mode, path, shared, n))
    budget.close()
    breaker.close()
    return {k: round(statistics.median(v), 2) for k, v in cells.items()}


def write_section(figures: dict[str, Any]) -> None:
    """Replace the fleet section at the end of benchmarks/RESULTS.md (``run.py`` keeps it)."""
    from benchmarks.run import APPENDED

    marker = f"{APPENDED}benchmarks/fleet.py --write -->"
    report = Path(__file__).parent / "RESULTS.md"
    text = report.read_text()
    if marker in text:
        text = text[: text.index(marker)].rstrip("\n") + "\n"
    cost = figures["microsecondsPerCall"]
    when = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    lines = [
        "",
        marker,
        "## Fleet",
        "",
        f"`python -m benchmarks.fleet --write`, {when} UTC:"
        f" {figures['workers']} worker processes, each with its own sync `RetryTransport` (default"
        " policy, at most 2 retries) over a loopback HTTP server answering 503 to every POST,"
        f" {figures['calls'] // figures['workers']} READ calls each; medians of"
        f" {len(figures['rounds']['shared'])} interleaved rounds (the counts do not vary).",
        "",
        "| budget | POSTs for " + f"{figures['calls']:,} calls |",
        "| --- | --- |",
        f"| one `RedisBudget` shared by the fleet | {figures['postsShared']:,g} |",
        f"| a `RetryBudget` per process | {figures['postsLocal']:,g} |",
        f"| bound asked for (1.1 x calls + 10) | {figures['bound']:,g} |",
        "",
        "Added cost of the budget per call (median microseconds, interleaved rounds):",
        "",
        "| call | local `RetryBudget` | `RedisBudget` |",
        "| --- | --- | --- |",
        f"| `record()`, the success path (no round trip) | {cost['local-record']:.2f} |"
        f" {cost['redis-record']:.2f} |",
        f"| `allow_retry()`, the retry path (one round trip) | {cost['local-allow']:.2f} |"
        f" {cost['redis-allow']:.0f} |",
        "",
        "The breaker's `allow(key)` and `record(key, failed=False)` per successful attempt"
        " (no round trip: the closed state is read from the cache, the outcome batched):"
        f" {cost['redis-breaker']:.2f} µs for a `RedisCircuitBreaker`,"
        f" {cost['local-breaker']:.2f} µs for a `CircuitBreaker`.",
        "",
    ]
    through = figures.get("transportMicroseconds")
    if through:
        lines += [
            "Per call through a transport (median microseconds, interleaved rounds): a"
            " `RedisBudget` and a `RedisCircuitBreaker` beside neither (the local budget, no"
            " breaker). Success: one POST answered at once (no round trip to Redis: the"
            " breaker's closed state is read from its cache, successes are batched). Retry:"
            " a 503, then the answer (one round trip on the call's path: the budget's"
            " `allow_retry`, which an async shell makes in a worker thread; the failure also"
            " wakes the breaker's background thread, which tells Redis at once and shares"
            " the cores meanwhile).",
            "",
            "| shell | path | neither | Redis budget + breaker | added |",
            "| --- | --- | --- | --- | --- |",
        ]
        for mode in ("sync", "async"):
            for path in ("success", "retry"):
                none, redis = through[f"{mode}-{path}-none"], through[f"{mode}-{path}-redis"]
                lines.append(
                    f"| {mode} | {path} | {none:.1f} | {redis:.1f} | {redis - none:+.1f} |"
                )
        lines.append("")
    report.write_text(text + "\n".join(lines))


def start_redis() -> RedisServer | None:
    """A redis-server of our own, started (the caller closes it); None, said on stderr, when
    none is installed."""
    binary = redis_server_binary()
    if binary is None:
        print("redis-server not found (see scripts/test.sh)", file=sys.stderr)
        return None
    redis = RedisServer(binary)
    redis.start()
    return redis


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--calls", type=int, default=250)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--write", action="store_true", help="put them in RESULTS.md too")
    args = parser.parse_args(argv)
    redis = start_redis()
    if redis is None:
        return 2
    try:
        posts: dict[str, list[int]] = {"shared": [], "local": []}
        for _ in range(args.rounds):
            posts["shared"].append(run_fleet(redis.url, workers=args.workers, calls=args.calls))
            posts["local"].append(run_fleet(None, workers=args.workers, calls=args.calls))
        cost = costs(redis.url, args.rounds)
        through = transport_costs(redis.url, max(args.rounds * 6, 30))
    finally:
        redis.close()
    total = args.workers * args.calls
    figures = {
        "calls": total,
        "workers": args.workers,
        "postsShared": statistics.median(posts["shared"]),
        "postsLocal": statistics.median(posts["local"]),
        "bound": 1.1 * total + 10,
        "rounds": posts,
        "microsecondsPerCall": cost,
        "transportMicroseconds": through,
    }
    if args.write:
        write_section(figures)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"fleet outage: {args.workers} processes x {args.calls} READ calls, all answered 503")
    print(f"  shared RedisBudget: {figures['postsShared']:g} POSTs (bound {figures['bound']:g})")
    print(f"  local budgets:      {figures['postsLocal']:g} POSTs")
    print("budget cost per call, median of interleaved rounds (microseconds):")
    for key, value in cost.items():
        print(f"  {key}: {value:g}")
    print("per call through a transport, median (microseconds):")
    for key, value in through.items():
        print(f"  {key}: {value:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
