"""Tail latency of MCP tool calls with and without hedged reads, over loopback.

The official ``mcp`` 2.x client calls the kitchen's ``lookup`` tool through
``mcp_safe_retry.httpx2.mcp_client``. The kitchen runs in a process of its own
(``python -m mcp_safe_retry.kitchen``) with the ``latency.slow_tail`` scenario: one
``tools/call`` POST in ``slowEvery`` waits ``slowMs`` before it reaches the server, the others
``fastMs`` plus up to ``jitterMs``. The draw is made per POST from a seed, so a hedged copy of
a slow request is usually fast, and a run replays exactly.

Every contender is a ``RetryPolicy``. The calls are sequential (an agent waits on each tool
call) and split into interleaved rounds; in each round every contender, in a shuffled order,
makes the same number of calls with the same seed, each in a kitchen run of its own, so the
kitchen's log counts each contender's POSTs and tool executions exactly. Reported per
contender: p50, p95, p99 and max latency of a call, POSTs and executions per call, and the
p99 as a ratio to the first contender's in the same run.

Run ``python benchmarks/hedging.py`` (``--calls 200 --rounds 4``; ``--json PATH`` writes the
figures). It starts and stops its kitchen itself; every call has a time limit.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
import attrs
import httpx

if __package__ in (None, ""):  # run as a script from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from mcp_safe_retry import History, Idempotency, RetryPolicy
from mcp_safe_retry.policy import AdaptiveDelay

SCENARIO = "latency.slow_tail"
MODERN = "2026-07-28"
TOOL = "lookup"

BASE = RetryPolicy(tools={TOOL: Idempotency.READ})

# One line per contender: the first is the baseline the p99 ratios are taken to.
CONTENDERS: dict[str, RetryPolicy] = {
    "no hedging": BASE,
    "hedge 50 ms": attrs.evolve(BASE, hedge_after=0.05),
    "hedge 50 ms, 2 hedges": attrs.evolve(BASE, hedge_after=0.05, max_hedges=2),
    "hedge adaptive p95": attrs.evolve(BASE, hedge_after="adaptive"),
    "hedge adaptive p90": attrs.evolve(BASE, hedge_after=AdaptiveDelay(quantile=0.9)),
    "hedge adaptive p80": attrs.evolve(BASE, hedge_after=AdaptiveDelay(quantile=0.8)),
}


@attrs.frozen
class Tail:
    """The kitchen's slow tail (``latency.slow_tail`` params)."""

    slow_every: int = 10
    slow_ms: int = 1000
    fast_ms: int = 10
    jitter_ms: int = 10

    def params(self, seed: int) -> dict[str, int]:
        return {
            "slowEvery": self.slow_every,
            "slowMs": self.slow_ms,
            "fastMs": self.fast_ms,
            "jitterMs": self.jitter_ms,
            "seed": seed,
        }


@attrs.define
class Tally:
    """What one contender measured across its rounds."""

    latencies: list[float] = attrs.field(factory=list)
    posts: int = 0  # tools/call POSTs the kitchen saw
    recorded_posts: int = 0  # POSTs the records show
    executions: int = 0
    slow_posts: int = 0  # POSTs the kitchen delayed by slowMs
    errors: int = 0


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), -(-len(ordered) * q // 100)))
    return ordered[int(rank) - 1]


class Kitchen:
    """``python -m mcp_safe_retry.kitchen`` in a child process, stopped on exit."""

    def __init__(self, start_timeout_s: float = 30.0) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "mcp_safe_retry.kitchen", "--port", "0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        deadline = time.monotonic() + start_timeout_s
        line = ""
        while not line.startswith("http://") and time.monotonic() < deadline:
            line = self._process.stdout.readline().strip()
            if self._process.poll() is not None:
                break
        if not line.startswith("http://"):
            self.stop()
            raise RuntimeError("the kitchen did not start")
        self.url = line
        self.base = line.rsplit("/", 1)[0]

    def url_for(self, params: Mapping[str, Any], run: str) -> str:
        query = urlencode(
            {"scenario": SCENARIO, "params": json.dumps(params, sort_keys=True), "run": run}
        )
        return f"{self.url}?{query}"

    def state(self, run: str) -> dict[str, Any]:
        with httpx.Client(timeout=10) as client:
            response = client.get(f"{self.base}/kitchen/state", params={"run": run})
            response.raise_for_status()
            state: dict[str, Any] = response.json()
            return state

    def stop(self) -> None:
        self._process.terminate()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(10)


async def run_batch(
    policy: RetryPolicy, url: str, calls: int, key_prefix: str, limit_s: float
) -> tuple[list[float], int, int]:
    """``calls`` sequential lookups in one session; latencies, POSTs recorded, errors."""
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    from mcp_safe_retry.httpx2 import mcp_client

    history = History(maxlen=max(64, calls * 2))
    latencies: list[float] = []
    errors = 0
    async with (
        mcp_client(policy=policy, history=history, timeout=limit_s) as http,
        Client(
            streamable_http_client(url, http_client=http), mode=MODERN, read_timeout_seconds=limit_s
        ) as client,
    ):
        for i in range(calls):
            started = time.perf_counter()
            with anyio.fail_after(limit_s):
                result = await client.call_tool(TOOL, {"key": f"{key_prefix}-{i}"})
            latencies.append(time.perf_counter() - started)
            errors += bool(result.is_error)
    recorded = sum(r.post_count for r in history.records() if r.method == "tools/call")
    return latencies, recorded, errors


def measure(
    contenders: Mapping[str, RetryPolicy],
    *,
    calls: int,
    rounds: int,
    tail: Tail,
    seed: int,
) -> dict[str, Tally]:
    """Run every contender for ``calls`` calls in ``rounds`` interleaved rounds."""
    kitchen = Kitchen()
    tallies = {name: Tally() for name in contenders}
    order = list(contenders)
    rng = random.Random(seed)
    limit_s = tail.slow_ms / 1000 * 4 + 10  # per call: even a few slow copies in a row
    try:
        for r in range(rounds):
            per_round = calls // rounds + (1 if r < calls % rounds else 0)
            params = tail.params(seed * 1000 + r)
            rng.shuffle(order)
            for index, name in enumerate(order):
                run = f"hedging-{seed}-{r}-{index}"
                url = kitchen.url_for(params, run)
                latencies, recorded, errors = anyio.run(
                    run_batch, contenders[name], url, per_round, run, limit_s
                )
                state = kitchen.state(run)
                posts = [p for p in state["posts"] if p["method"] == "tools/call"]
                tally = tallies[name]
                tally.latencies += latencies
                tally.recorded_posts += recorded
                tally.errors += errors
                tally.posts += len(posts)
                tally.slow_posts += sum(p["fault"] == "slow_tail:slow" for p in posts)
                tally.executions += state["executions"].get(TOOL, 0)
    finally:
        kitchen.stop()
    return tallies


def summarise(tallies: Mapping[str, Tally], tail: Tail) -> list[dict[str, Any]]:
    rows = []
    baseline = None
    for name, tally in tallies.items():
        n = len(tally.latencies)
        p99 = percentile(tally.latencies, 99)
        baseline = p99 if baseline is None else baseline
        rows.append(
            {
                "contender": name,
                "calls": n,
                "p50_ms": round(percentile(tally.latencies, 50) * 1000, 1),
                "p95_ms": round(percentile(tally.latencies, 95) * 1000, 1),
                "p99_ms": round(p99 * 1000, 1),
                "max_ms": round(max(tally.latencies) * 1000, 1),
                "mean_ms": round(statistics.fmean(tally.latencies) * 1000, 1),
                "p99_ratio": round(p99 / baseline, 3),
                "posts_per_call": round(tally.posts / n, 3),
                "recorded_posts_per_call": round(tally.recorded_posts / n, 3),
                "executions_per_call": round(tally.executions / n, 3),
                "slow_posts": tally.slow_posts,
                "tool_errors": tally.errors,
                "tail": attrs.asdict(tail),
            }
        )
    return rows


def render(rows: Sequence[Mapping[str, Any]]) -> str:
    head = (
        f"{'contender':<22} {'calls':>5} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} "
        f"{'max ms':>8} {'p99/base':>8} {'POSTs/call':>10} {'runs/call':>9} {'slow':>5}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['contender']:<22} {r['calls']:>5} {r['p50_ms']:>8} {r['p95_ms']:>8} "
            f"{r['p99_ms']:>8} {r['max_ms']:>8} {r['p99_ratio']:>8} "
            f"{r['posts_per_call']:>10} {r['executions_per_call']:>9} {r['slow_posts']:>5}"
        )
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=200, help="calls per contender")
    parser.add_argument("--rounds", type=int, default=4, help="interleaved rounds")
    parser.add_argument("--seed", type=int, default=1, help="seed of the slow tail and order")
    parser.add_argument("--slow-every", type=int, default=10)
    parser.add_argument("--slow-ms", type=int, default=1000)
    parser.add_argument("--fast-ms", type=int, default=10)
    parser.add_argument("--jitter-ms", type=int, default=10)
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not 1 <= args.rounds <= args.calls <= 10_000:
        raise SystemExit("need 1 <= rounds <= calls <= 10000")
    tail = Tail(args.slow_every, args.slow_ms, args.fast_ms, args.jitter_ms)
    started = time.monotonic()
    tallies = measure(CONTENDERS, calls=args.calls, rounds=args.rounds, tail=tail, seed=args.seed)
    rows = summarise(tallies, tail)
    print(render(rows))
    print(
        f"\nslow tail: 1 POST in {tail.slow_every} waits {tail.slow_ms} ms, the others "
        f"{tail.fast_ms}+{tail.jitter_ms} ms; {args.rounds} rounds, seed {args.seed}, "
        f"{time.monotonic() - started:.1f} s"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    failed = [r["contender"] for r in rows if r["tool_errors"]]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
