"""What the call ledger costs an UNSAFE tool call, beside the same call with the duplicate
guard off and beside a READ call, measured in the same run.

``python -m benchmarks.ledger [--calls N] [--rounds R]``: one sync ``RetryTransport`` per
contender over an ``httpx.MockTransport`` that answers a prebuilt 1 KiB tool result, the
contenders alternated round by round (the order reversed every other round). Each UNSAFE
call has arguments of its own (a real application's charges differ), so the ledger writes
and forgets one entry per call. Reported: microseconds per call (median of the rounds), and
each contender's ratio to the guard-off UNSAFE call.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import httpx

from mcp_safe_retry import CallLedger, RetryPolicy, RetryTransport

URL = "http://mcp.test/mcp"
RESULT = {"content": [{"type": "text", "text": "x" * 1024}]}


def _answer(request: httpx.Request) -> httpx.Response:
    sent = json.loads(request.content)
    return httpx.Response(200, json={"jsonrpc": "2.0", "id": sent["id"], "result": RESULT})


def _contender(tool: str, guard: str) -> Callable[[int], None]:
    policy = RetryPolicy(duplicate_guard=guard, tools={"lookup": "read"})
    transport = RetryTransport(httpx.MockTransport(_answer), policy=policy, ledger=CallLedger())
    client = httpx.Client(transport=transport)

    def call(n: int) -> None:
        params = {"name": tool, "arguments": {"amount": n}}
        body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}
        client.post(URL, json=body).read()

    return call


CONTENDERS = {
    "UNSAFE, guard off (baseline)": ("charge", "off"),
    "UNSAFE, guard hold (the ledger)": ("charge", "hold"),
    "READ (never in the ledger)": ("lookup", "hold"),
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    calls = {name: _contender(*how) for name, how in CONTENDERS.items()}
    for call in calls.values():  # warm: past the history's bound, a long-lived client
        for n in range(1200):
            call(n)
    times: dict[str, list[float]] = {name: [] for name in calls}
    for round_ in range(args.rounds):
        order = list(calls) if round_ % 2 == 0 else list(reversed(calls))
        for name in order:
            start = time.perf_counter()
            for n in range(args.calls):
                calls[name](round_ * args.calls + n)
            times[name].append((time.perf_counter() - start) / args.calls * 1e6)
    baseline = statistics.median(times["UNSAFE, guard off (baseline)"])
    print(f"{'contender':<34} {'us/call':>9} {'ratio':>7}")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:<34} {median:9.1f} {median / baseline:7.3f}")


if __name__ == "__main__":
    main()
