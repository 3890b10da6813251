"""What the gateway costs a call, beside calling the server directly and beside a plain
pass-through forwarder, measured in the same run.

``python -m benchmarks.gateway [--calls N] [--rounds R] [--seconds S]``: MCPServer
(``_mcp_server.py``) runs under uvicorn in a process of its own on 127.0.0.1; in front of it,
each in a process of its own, the plain forwarder (``_forwarder.py``) and the gateway
(``mcp-safe-retry gateway --upstream ...``, default policy). Three official mcp 2.x clients
(``Client.call_tool`` over ``streamable_http_client``, bare) in this process call the tool
``text(size)``: one directly, one through the forwarder, one through the gateway, alternated
call by call (the order reversed every other call), in both protocol eras (2026-07-28: JSON
answers; 2025-11-25: a session, SSE answers) and for 1 KiB and 64 KiB of text.

Reported per contender: the wall time of a call, p50 and p99 over every call of every round,
and what it adds to the direct call's; the CPU time per call of the forwarder's and the
gateway's process (the scheduler's count from ``/proc``, every thread, over each round,
divided by its calls).
Then throughput: W load processes, each keeping C raw ``tools/call`` POSTs in flight for S
seconds, through each front to a server that answers a prebuilt 1 KiB result
(``_server.py``, so the front rather than the server is what the load finds): calls per
second, and the front process's CPU per call and CPU use at that load, and the calls per
second one core would sustain at that CPU per call (one process runs one event loop).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from ._payloads import REQUEST

ERAS = {"2026-07-28": "auto", "2025-11-25": "legacy"}  # era -> the Client's mode
SIZES = {"1 KiB": 1024, "64 KiB": 65536}
FRONTS = ("direct", "forwarder", "gateway")


def cpu_seconds(pid: int) -> float:
    """The CPU time process ``pid`` has run so far, all its threads, in nanoseconds as the
    scheduler counts it (``/proc/PID/task/*/schedstat``; ``/proc/PID/stat``'s utime and
    stime are sampled in 10 ms ticks, too coarse for a call)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        counts = f"/proc/{pid}/task/{task}/schedstat"
        with contextlib.suppress(FileNotFoundError), open(counts) as read:  # a thread may end
            total += int(read.read().split()[0])
    return total / 1e9


@contextlib.contextmanager
def started(command: list[str], *, port_line: bool) -> Iterator[tuple[str, int]]:
    """A child serving on 127.0.0.1: its first line (``PORT n`` or a URL) and pid; stopped
    by its pid afterwards (stdin closed, then SIGTERM)."""
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        if port_line:
            if not line.startswith("PORT "):
                raise RuntimeError(f"{command} did not start: {line!r}")
            line = f"http://127.0.0.1:{int(line.split()[1])}"
        elif not line.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"{command} did not start: {line!r}")
        yield line, process.pid
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.asynccontextmanager
async def client(url: str, mode: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as session,  # type: ignore[arg-type]
    ):
        yield session


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def latencies(
    urls: dict[str, str], pids: dict[str, int], era: str, size: int, *, calls: int, rounds: int
) -> dict[str, Any]:
    """Per front: every call's wall time, and its process's CPU per call (medians of rounds)."""
    mode = ERAS[era]
    async with contextlib.AsyncExitStack() as stack:
        enter = stack.enter_async_context
        sessions = {name: await enter(client(urls[name], mode)) for name in FRONTS}
        for name, session in sessions.items():
            if str(session.protocol_version) != era:
                raise RuntimeError(f"{name} negotiated {session.protocol_version}, not {era}")
        order = list(sessions.items())
        for _ in range(20):  # warm up: connections, the SDK's follow-up tools/list
            for _, session in order:
                await session.call_tool("text", {"size": size})
        walls: dict[str, list[float]] = {name: [] for name in FRONTS}
        cpu: dict[str, list[float]] = {name: [] for name in pids}
        for _ in range(rounds):
            before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            for i in range(calls):
                for name, session in order if i % 2 == 0 else order[::-1]:
                    start = time.perf_counter()
                    await session.call_tool("text", {"size": size})
                    walls[name].append(time.perf_counter() - start)
            for name, pid in pids.items():
                served = calls * (len(FRONTS) if name == "upstream" else 1)
                cpu[name].append((cpu_seconds(pid) - before[name]) / served)
    return {"walls": walls, "cpu": {name: statistics.median(v) for name, v in cpu.items()}}


async def load(url: str, seconds: float, concurrency: int) -> int:
    """``concurrency`` POSTs of a ``tools/call`` at a time for ``seconds``: how many were
    answered 200 (the load one worker process puts on a front)."""
    done = 0
    headers = {"accept": "application/json, text/event-stream",
               "content-type": "application/json"}  # fmt: skip
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        await http.post(url, content=REQUEST, headers=headers)
        deadline = time.perf_counter() + seconds

        async def work() -> None:
            nonlocal done
            while time.perf_counter() < deadline:
                response = await http.post(url, content=REQUEST, headers=headers)
                done += response.status_code == 200

        await asyncio.gather(*(work() for _ in range(concurrency)))
    return done


def throughput(url: str, pid: int, args: argparse.Namespace) -> tuple[float, float]:
    """Calls per second ``args.workers`` load processes get through ``url`` together, and
    the front process's CPU seconds per call meanwhile."""
    command = [sys.executable, "-m", "benchmarks.gateway", "--load", url,
               "--seconds", str(args.seconds), "--concurrency", str(args.concurrency)]  # fmt: skip
    before, start = cpu_seconds(pid), time.perf_counter()
    workers = [
        subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(args.workers)
    ]
    counts = [int(w.communicate(timeout=args.seconds + 60)[0]) for w in workers]
    took, used = time.perf_counter() - start, cpu_seconds(pid) - before
    done = sum(counts)
    return done / took, used / max(done, 1)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.2f} ms"


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f} µs"


async def measure(args: argparse.Namespace, urls: dict[str, str], pids: dict[str, int]) -> None:
    """The latency table: the official client, MCPServer upstream."""
    print(f"{args.rounds} rounds x {args.calls} calls per front, alternated call by call\n")
    print("| era | result | front | p50 | p99 | added p50 | added p99 | front CPU per call |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for era in ERAS:
        for label, size in SIZES.items():
            found = await latencies(urls, pids, era, size, calls=args.calls, rounds=args.rounds)
            walls, cpu = found["walls"], found["cpu"]
            p50 = {name: statistics.median(walls[name]) for name in FRONTS}
            p99 = {name: quantile(walls[name], 0.99) for name in FRONTS}
            for name in FRONTS:
                added = "" if name == "direct" else f"+{ms(p50[name] - p50['direct'])}"
                added99 = "" if name == "direct" else f"+{ms(p99[name] - p99['direct'])}"
                used = us(cpu[name]) if name in cpu else f"(server {us(cpu['upstream'])})"
                print(f"| {era} | {label} | {name} | {ms(p50[name])} | {ms(p99[name])} "
                      f"| {added} | {added99} | {used} |")  # fmt: skip


def throughputs(args: argparse.Namespace) -> None:
    """The throughput table: raw POSTs from load processes, a prebuilt-answer upstream
    (``_server.py``), so the front, not the server, is what is loaded."""
    print(f"\nThroughput: {args.workers} load processes x {args.concurrency} POSTs at a time, "
          f"{args.seconds:g} s per front, a prebuilt 1 KiB answer\n")  # fmt: skip
    print("| front | calls/s | front CPU per call | front CPU use | one core's worth |")
    print("| --- | --- | --- | --- | --- |")
    with started([sys.executable, "-m", "benchmarks._server"], port_line=True) as (base, server):
        upstream = f"{base}/mcp/json-1k"  # a tools/call answer for id 1, the load's id
        with fronts(upstream) as (urls, pids):
            for name in FRONTS:
                rate, per_call = throughput(urls[name], pids.get(name, server), args)
                what = "server" if name == "direct" else name
                ceiling = f"{1 / per_call:,.0f} calls/s" if per_call else "-"
                print(f"| {name} | {rate:,.0f} | {us(per_call)} ({what}) | {rate * per_call:.0%} "
                      f"| {ceiling} |")  # fmt: skip


@contextlib.contextmanager
def fronts(upstream: str) -> Iterator[tuple[dict[str, str], dict[str, int]]]:
    """The forwarder and the gateway in front of ``upstream``: URLs and pids per front."""
    python = sys.executable
    gateway = [python, "-m", "mcp_safe_retry", "gateway", "--upstream", upstream,
               "--log-level", "warning"]  # fmt: skip
    with (
        started([python, "-m", "benchmarks._forwarder", upstream], port_line=True) as fwd,
        started(gateway, port_line=False) as gw,
    ):
        path = httpx.URL(upstream).path
        yield {"direct": upstream, "forwarder": fwd[0] + path, "gateway": gw[0]}, {
            "forwarder": fwd[1], "gateway": gw[1]
        }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gateway")
    parser.add_argument("--calls", type=int, default=200, help="calls per front per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2, help="load processes (throughput)")
    parser.add_argument("--concurrency", type=int, default=8, help="POSTs at a time each")
    parser.add_argument("--seconds", type=float, default=10.0, help="per front (throughput)")
    parser.add_argument("--load", metavar="URL", help=argparse.SUPPRESS)  # one load worker
    args = parser.parse_args(argv)
    if args.load:
        print(asyncio.run(load(args.load, args.seconds, args.concurrency)))
        return 0
    server_command = [sys.executable, "-m", "benchmarks._mcp_server"]
    with (
        started(server_command, port_line=True) as (base, server),
        fronts(f"{base}/mcp") as (
            urls,
            pids,
        ),
    ):
        asyncio.run(measure(args, urls, {"upstream": server, **pids}))
    throughputs(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
