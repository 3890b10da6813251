"""Per-call cost of two source trees of mcp-safe-retry, A/B, interleaved across processes.

Both trees cannot be imported by one process (one package name), so every round runs one
short child process per tree, in a shuffled order; each child times ``--calls`` async
JSON calls (a READ ``tools/call``, no hedging) through ``AsyncRetryTransport`` over a
prebuilt-body inner transport and prints its median per-call microseconds over ``--batches``
batches. Reported: each tree's median across rounds and the ratio B/A.

python -m benchmarks.ab --a /path/to/old/src --b src   (each a directory holding the package)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import asyncio, json, sys, time
import httpx
from mcp_safe_retry import AsyncRetryTransport, Idempotency, RetryPolicy
from benchmarks._mock import PrebuiltTransport
from benchmarks._payloads import JSON_HEADERS, json_response

calls, batches = int(sys.argv[1]), int(sys.argv[2])
request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "lookup", "arguments": {"k": 1}}}).encode()
headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}

async def main() -> None:
    inner = PrebuiltTransport([json_response(512)], JSON_HEADERS)
    policy = RetryPolicy(tools={"lookup": Idempotency.READ})
    transport = AsyncRetryTransport(inner, policy=policy)
    times = []
    for _ in range(batches):
        started = time.perf_counter()
        for _ in range(calls):
            response = await transport.handle_async_request(
                httpx.Request("POST", "http://mcp.test/mcp", headers=headers, content=request)
            )
            await response.aread()
        times.append((time.perf_counter() - started) / calls * 1e6)
    times.sort()
    print(times[len(times) // 2])

asyncio.run(main())
"""


def child(tree: Path, calls: int, batches: int) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(calls), str(batches)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return float(done.stdout.strip())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--a", type=Path, required=True, help="tree A (the baseline)")
    parser.add_argument("--b", type=Path, default=ROOT / "src", help="tree B")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    trees = {"A": args.a.resolve(), "B": args.b.resolve()}
    results: dict[str, list[float]] = {"A": [], "B": []}
    order = list(trees)
    rng = random.Random(1)
    for _ in range(args.rounds):
        rng.shuffle(order)
        for name in order:
            results[name].append(child(trees[name], args.calls, args.batches))
    a, b = statistics.median(results["A"]), statistics.median(results["B"])
    summary = {"a_us": round(a, 2), "b_us": round(b, 2), "ratio_b_over_a": round(b / a, 3)}
    print(f"A {a:.2f} us/call  B {b:.2f} us/call  B/A {b / a:.3f}  ({args.rounds} rounds)")
    if args.json is not None:
        args.json.write_text(json.dumps({**summary, "rounds": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
