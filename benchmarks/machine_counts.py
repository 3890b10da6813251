"""Machine instructions per call, counted by callgrind: what the floors look like without noise.

    PYTHONPATH=src python -m benchmarks.machine_counts [--calls N] [--official-calls N]
        [--warm N] [--cache] [--no-official] [--ledger]

Time on a shared 2-core machine moves by tens of percent from run to run; machine instructions
do not. Each contender runs in a child process under ``valgrind --tool=callgrind`` with
collection off; the child warms up (1,100 calls unless ``--warm`` says otherwise: past the
history's bound, so that the garbage collector's periodic work is the steady state's, not a
growing heap's), switches collection on (``callgrind_control -i on``), makes
its calls, switches it off, and the count is divided by the calls. Everything the process runs
between the switches is counted, in Python and in C (msgspec, orjson, pydantic-core, the
interpreter, the socket calls' user-space part), so this is the one measure here that sees C.
``--cache`` adds callgrind's cache and branch simulation (its model of the first-level caches
and a simple predictor, not this machine's): misses and mispredicts per call beside the
instructions.

- **In process** (``async_httpx2``'s prebuilt 1 KiB answers through ``httpx2.AsyncClient``):
  bare, the hand-on floor sketch (``floor.HandOnTransport``) and mcp-safe-retry; the issue's
  in-process floor read in instructions: added by mcp-safe-retry / added by the sketch; and
  the sync one (``httpx.Client``, ``floor.py``'s sketch with successes recognised).
- **The official mcp 2.x client** (``official.py``'s server in another process, not counted):
  bare ``call_tool``, wrapped by mcp-safe-retry, and wrapped by the hand-on sketch
  (``floor.SessionHandOnTransport``), both eras, 1 KiB; the ratio is the client process's
  instructions per call to the bare client's.

- **The call ledger** (``--ledger``: only this table): a sync ``RetryTransport`` over a
  ``MockTransport``'s 1 KiB tool result (``ledger.py``'s contenders): an UNSAFE call with the
  duplicate guard off, the same with the ledger (each call's arguments its own), and a READ.

Needs ``valgrind`` (``callgrind_control`` comes with it); without it, says so and exits 2.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["main"]

IN_PROCESS = ("httpx2", "hand-on sketch", "mcp-safe-retry")
IN_CASES = ("json-1k", "sse-1k")
SYNC = ("httpx", "sketch, successes recognised", "mcp-safe-retry")  # floor.py's sync contenders
OFFICIAL = ("mcp client", "hand-on sketch", "mcp-safe-retry")
EVENTS = ("Ir", "I1mr", "D1mr", "D1mw", "Bcm", "Bim")  # what --cache adds beside Ir


def _collecting(on: bool) -> None:
    """Switch callgrind's collection for this process (a no-op outside valgrind)."""
    if os.environ.get("MACHINE_COUNTS_CHILD"):
        subprocess.run(
            ["callgrind_control", "-i", "on" if on else "off", str(os.getpid())],
            stdout=subprocess.DEVNULL,
            check=False,
        )


def _warm() -> int:
    """The calls a child makes before it counts (``--warm``, by default past the history's
    1,000 records: every counted call then evicts one, as in a long-lived client, and the
    garbage collector has met the full history)."""
    return int(os.environ.get("MACHINE_COUNTS_WARM", "1100"))


def _in_process_child(who: str, case: str, calls: int) -> None:
    from .async_httpx2 import CASES, batches, contenders
    from .floor import HandOnTransport

    wrappers: dict[str, Any] = dict(contenders())
    wrappers["hand-on sketch"] = lambda inner: HandOnTransport(inner, rebuild=False)
    loop = asyncio.new_event_loop()
    batch = batches(CASES[case], loop, {who: wrappers[who]})[who]
    batch(_warm())
    _collecting(True)
    batch(calls)
    _collecting(False)
    loop.close()


def _sync_child(who: str, calls: int) -> None:
    from .floor import _batches

    batch = _batches("json-1k")[who]
    batch(_warm())
    _collecting(True)
    batch(calls)
    _collecting(False)


def _ledger_child(who: str, calls: int) -> None:
    from .ledger import CONTENDERS, _contender

    call = _contender(*CONTENDERS[who])
    for n in range(_warm()):
        call(n)
    _collecting(True)
    for n in range(calls):
        call(_warm() + n)
    _collecting(False)


def _ledger(calls: int, cache: bool, say: Callable[[str], None]) -> None:
    from .ledger import CONTENDERS

    say("## The call ledger (sync RetryTransport, 1 KiB tool result), machine instructions")
    runs = {who: _count(["ledger", who, str(calls)], calls, cache=cache) for who in CONTENDERS}
    _table(say, f"tools/call ({calls} calls each)", runs, cache)


def _official_child(who: str, mode: str, calls: int, url: str) -> None:
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    from .official import MAX_EVENT, http_clients

    async def run() -> None:
        async with http_clients()[who]() as http:  # built as the official benchmark's
            transport = streamable_http_client(url, http_client=http, max_sse_event_size=MAX_EVENT)
            async with Client(transport, mode=mode) as client:
                for _ in range(_warm()):
                    await client.call_tool("text", {"size": 1024})
                _collecting(True)
                for _ in range(calls):
                    await client.call_tool("text", {"size": 1024})
                _collecting(False)

    asyncio.run(run())


def _count(args: list[str], calls: int, *, cache: bool) -> dict[str, float]:
    """Run this module as a child under callgrind; its counts per call, by event."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "callgrind.out"
        command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={out}",
            *(["--cache-sim=yes", "--branch-sim=yes"] if cache else []),
            sys.executable,
            "-m",
            "benchmarks.machine_counts",
            "--child",
            *args,
        ]
        env = {**os.environ, "MACHINE_COUNTS_CHILD": "1"}
        done = subprocess.run(
            command, check=False, env=env, capture_output=True, text=True, timeout=1800
        )
        if done.returncode != 0 or not out.exists():
            raise RuntimeError(f"callgrind child {args} failed: {done.stderr[-2000:]}")
        return _per_call(out.read_text(), calls)


def _per_call(profile: str, calls: int) -> dict[str, float]:
    """The ``events:`` and ``totals:`` lines of a callgrind file, per call."""
    events = re.search(r"^events:\s*(.+)$", profile, re.M)
    totals = re.search(r"^totals:\s*(.+)$", profile, re.M)  # "summary:" may say 0
    if events is None or totals is None:
        raise RuntimeError("no totals in the callgrind output")
    values = [int(v) for v in totals.group(1).split()]
    return {
        name: value / calls for name, value in zip(events.group(1).split(), values, strict=True)
    }


def _row(name: str, counts: dict[str, float], bare: dict[str, float], cache: bool) -> str:
    ir = counts["Ir"]
    cells = [
        name,
        f"{ir / 1000:,.1f} k",
        f"x{ir / bare['Ir']:.3f}",
        f"{(ir - bare['Ir']) / 1000:+,.1f} k",
    ]
    if cache:
        for event in EVENTS[1:]:
            cells.append(f"{counts.get(event, 0.0) - bare.get(event, 0.0):+,.0f}")
    return "| " + " | ".join(cells) + " |"


def _header(first: str, cache: bool) -> list[str]:
    cells = [first, "instructions per call", "ratio to bare", "added"]
    if cache:
        cells += [f"added {event}" for event in EVENTS[1:]]
    return ["| " + " | ".join(cells) + " |", "|" + " --- |" * len(cells)]


def _table(
    say: Callable[[str], None],
    title: str,
    counts: dict[str, dict[str, float]],
    cache: bool,
    sketch: str | None = None,
) -> None:
    """One table: the first contender is the bare one; with ``sketch``, the ratio of what
    mcp-safe-retry adds to what that sketch adds."""
    names = list(counts)
    bare = counts[names[0]]
    say(f"\n{title}\n")
    for line in _header("contender", cache):
        say(line)
    for who in names:
        say(_row(who, counts[who], bare, cache))
    if sketch is not None:
        ours = counts["mcp-safe-retry"]["Ir"] - bare["Ir"]
        theirs = counts[sketch]["Ir"] - bare["Ir"]
        say(f"\nadded by mcp-safe-retry / added by the {sketch}: {ours / theirs:.2f}x")


def _in_process(calls: int, cache: bool, say: Callable[[str], None]) -> None:
    say("## In process (httpx2.AsyncClient, prebuilt 1 KiB answers), machine instructions")
    for case in IN_CASES:
        runs = {
            who: _count(["in", who, case, str(calls)], calls, cache=cache) for who in IN_PROCESS
        }
        _table(say, f"{case} ({calls} calls each)", runs, cache, "hand-on sketch")


def _sync(calls: int, cache: bool, say: Callable[[str], None]) -> None:
    say("\n## In process, sync (httpx.Client, prebuilt 1 KiB JSON answer), machine instructions")
    runs = {who: _count(["sync", who, str(calls)], calls, cache=cache) for who in SYNC}
    _table(say, f"json-1k ({calls} calls each)", runs, cache, "sketch, successes recognised")


def _official(calls: int, cache: bool, say: Callable[[str], None]) -> None:
    from .official import ERAS, official_server

    say("\n## The official mcp 2.x client, 1 KiB, the client process's machine instructions")
    with official_server() as url:
        for era, mode in ERAS.items():
            runs = {
                who: _count(["official", who, mode, str(calls), url], calls, cache=cache)
                for who in OFFICIAL
            }
            _table(say, f"{era} ({calls} call_tool each)", runs, cache)


def main(argv: list[str]) -> int:
    """See the module's docstring."""
    if argv[:1] == ["--child"]:
        kind, who, *rest = argv[1:]
        if kind == "in":
            _in_process_child(who, rest[0], int(rest[1]))
        elif kind == "sync":
            _sync_child(who, int(rest[0]))
        elif kind == "ledger":
            _ledger_child(who, int(rest[0]))
        else:
            _official_child(who, rest[0], int(rest[1]), rest[2])
        return 0
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("machine_counts needs valgrind (callgrind_control comes with it)", file=sys.stderr)
        return 2
    if "--warm" in argv:
        os.environ["MACHINE_COUNTS_WARM"] = argv[argv.index("--warm") + 1]
    calls = int(argv[argv.index("--calls") + 1]) if "--calls" in argv else 1000
    official = int(argv[argv.index("--official-calls") + 1]) if "--official-calls" in argv else 300
    cache = "--cache" in argv
    if "--ledger" in argv:
        _ledger(calls, cache, print)
        return 0
    _in_process(calls, cache, print)
    _sync(calls, cache, print)
    if "--no-official" not in argv:
        _official(official, cache, print)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
