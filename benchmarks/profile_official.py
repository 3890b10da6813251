"""Where one official-client ``call_tool`` spends its time, wrapped and bare, both eras.

    PYTHONPATH=src python -m benchmarks.profile_official [--quick] [--calls N] [--top N]

The same server process and sessions as ``benchmarks/official.py`` (MCPServer under uvicorn
in another process; one ``mcp.client.Client`` per contender on an event loop of its own).
Everything that loop's thread runs during the calls is measured: the SDK, pydantic,
httpx2, the transport, anyio and asyncio. Two counters, both per ``call_tool``:

- **Bytecode instructions** executed (``sys.settrace`` with ``f_trace_opcodes``), by
  package. Deterministic, so the difference between wrapped and bare is exact on a loaded
  machine; it cannot see inside C code (orjson, msgspec, pydantic-core, the socket).
- **cProfile** on the thread's CPU clock: calls per function (exact; a coroutine counts
  once per resumption) and CPU time (inflated by the profiler, so read it as shares, not
  as microseconds), for the functions of mcp-safe-retry by cumulative and
  by self time, by module, and the functions elsewhere whose call counts the wrapper
  changes (what wrapping costs outside our own code).
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time
from collections.abc import Callable
from typing import Any

from ._opcodes import Bracket, count_opcodes
from .official import BARE, ERAS, OURS, SIZES, Sessions, official_server

__all__ = ["main"]


def profile(run: Bracket) -> pstats.Stats:
    profiler = cProfile.Profile(time.thread_time)  # CPU time: waiting on the socket is free
    run(profiler.enable, profiler.disable)
    return pstats.Stats(profiler)


def _label(key: tuple[str, int, str]) -> str:
    filename, line, name = key
    if filename == "~":
        return name
    for marker in ("site-packages/", "/src/"):
        if marker in filename:
            filename = filename.split(marker, 1)[1]
            break
    return f"{filename}:{line}({name})"


def _per_call(stats: pstats.Stats, calls: int) -> dict[tuple[str, int, str], tuple[float, ...]]:
    """function -> (calls, self µs, cumulative µs), per call_tool."""
    out = {}
    for key, (_cc, nc, tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        out[key] = (nc / calls, tt * 1e6 / calls, ct * 1e6 / calls)
    return out


def report(era: str, size: str, calls: int, results: dict[str, Any], top: int) -> list[str]:
    bare_ops: dict[str, float] = results[BARE]["opcodes"]
    ours_ops: dict[str, float] = results[OURS]["opcodes"]
    lines = [f"=== {era}, text-{size}: per call_tool ({calls} profiled calls each)", ""]
    lines.append("bytecode instructions by package     bare    wrapped      added")
    for name in sorted(set(bare_ops) | set(ours_ops), key=lambda n: -ours_ops.get(n, 0)):
        b, o = bare_ops.get(name, 0.0), ours_ops.get(name, 0.0)
        lines.append(f"  {name:30s} {b:9.0f} {o:10.0f} {o - b:+10.0f}")
    b_total, o_total = sum(bare_ops.values()), sum(ours_ops.values())
    lines.append(
        f"  {'total':30s} {b_total:9.0f} {o_total:10.0f} {o_total - b_total:+10.0f}"
        f"  (x{o_total / b_total:.3f})"
    )
    bare = _per_call(results[BARE]["stats"], calls)
    ours = _per_call(results[OURS]["stats"], calls)
    b_fn = sum(v[0] for v in bare.values())
    o_fn = sum(v[0] for v in ours.values())
    b_t = sum(v[1] for v in bare.values())
    o_t = sum(v[1] for v in ours.values())
    lines += [
        "",
        f"function calls (cProfile): bare {b_fn:.0f}, wrapped {o_fn:.0f} ({o_fn - b_fn:+.0f});"
        f" profiled time bare {b_t:.0f} µs, wrapped {o_t:.0f} µs ({o_t - b_t:+.0f} µs,"
        " inflated by the profiler)",
    ]
    mine = {k: v for k, v in ours.items() if "mcp_safe_retry" in k[0]}
    own_self = sum(v[1] for v in mine.values())
    lines += [
        "",
        f"mcp-safe-retry's own code: {sum(v[0] for v in mine.values()):.0f} function calls, "
        f"{own_self:.0f} µs self time ({own_self / max(o_t - b_t, 1e-9):.0%} of the profiled"
        " difference)",
        "",
        "  by module (self µs, calls)",
    ]
    modules: dict[str, list[float]] = {}
    for key, (nc, tt, _ct) in mine.items():
        module = _label(key).split(":", 1)[0]
        acc = modules.setdefault(module, [0.0, 0.0])
        acc[0] += tt
        acc[1] += nc
    for module, (tt, nc) in sorted(modules.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"    {tt:8.1f} µs {nc:6.0f}  {module}")
    for title, column in (("cumulative", 2), ("self", 1)):
        lines += ["", f"  top by {title} time (µs, calls)"]
        for key, value in sorted(mine.items(), key=lambda kv: -kv[1][column])[:top]:
            lines.append(f"    {value[column]:8.1f} µs {value[0]:6.1f}  {_label(key)}")
    changed = []
    for key in set(bare) | set(ours):
        if "mcp_safe_retry" in key[0]:
            continue
        b_v = bare.get(key, (0.0, 0.0, 0.0))
        o_v = ours.get(key, (0.0, 0.0, 0.0))
        if abs(o_v[0] - b_v[0]) >= 0.5:
            changed.append((o_v[1] - b_v[1], o_v[0] - b_v[0], key))
    lines += [
        "",
        "  outside our code, call counts the wrapper changes (self µs added, calls added)",
    ]
    for dt, dn, key in sorted(changed, key=lambda t: -abs(t[0]))[:top]:
        lines.append(f"    {dt:+8.1f} µs {dn:+6.1f}  {_label(key)}")
    return [*lines, ""]


def calls_of(sessions: Sessions, name: str, size: int, n: int) -> Bracket:
    """n calls of ``text(size)`` by contender ``name``, with ``start()`` before the first
    and ``stop()`` after the last, run in the sessions' loop thread."""
    client = sessions.client(name)

    async def go(start: Callable[[], None], stop: Callable[[], None]) -> float:
        call = client.call_tool
        arguments = {"size": size}
        start()
        for _ in range(n):
            await call("text", arguments)
        stop()
        return 0.0

    def bracket(start: Callable[[], None], stop: Callable[[], None]) -> None:
        sessions.run(go(start, stop))

    return bracket


def measure(
    sessions: Sessions, name: str, size: int, calls: int, opcode_calls: int
) -> dict[str, Any]:
    """Instructions per call by package, and a cProfile of ``calls`` calls."""
    calls_of(sessions, name, size, max(10, calls // 4))(lambda: None, lambda: None)  # warm
    opcodes = count_opcodes(calls_of(sessions, name, size, opcode_calls))
    return {
        "opcodes": {k: v / opcode_calls for k, v in opcodes.items()},
        "stats": profile(calls_of(sessions, name, size, calls)),
    }


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    calls = int(argv[argv.index("--calls") + 1]) if "--calls" in argv else (5 if quick else 200)
    top = int(argv[argv.index("--top") + 1]) if "--top" in argv else 25
    sizes = [a for a in argv if a in SIZES] or ["1k"]
    opcode_calls = max(1, min(calls, 5 if quick else 50))
    with official_server() as url:
        for era, mode in ERAS.items():
            with Sessions(url, mode) as sessions:
                for size_name in sizes:
                    size = SIZES[size_name]
                    sessions.check(size)
                    results = {
                        name: measure(sessions, name, size, calls, opcode_calls)
                        for name in (BARE, OURS)
                    }
                    print("\n".join(report(era, size_name, calls, results, top)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
