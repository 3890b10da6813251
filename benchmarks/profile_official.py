"""Where one official-client ``call_tool`` spends its time, wrapped and bare, both eras.

    PYTHONPATH=src python -m benchmarks.profile_official [--quick] [--calls N] [--top N]
        [SIZE ...] [ERA ...]

Sizes among 1k (the default), 64k and 1m; eras 2026-07-28, 2025-11-25 (default both).

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

import asyncio
import cProfile
import pstats
import sys
import time
from collections import Counter
from collections.abc import Callable
from types import CodeType
from typing import Any

import httpx2

from ._opcodes import Bracket, by_package, count_opcodes, label, package_of_label
from ._payloads import REQUEST
from .async_httpx2 import BARE as IN_BARE
from .async_httpx2 import HEADERS, URL, Case, PrebuiltTransport2, answer, contenders
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
    out: dict[tuple[str, int, str], tuple[float, ...]] = {}
    for key, (_cc, nc, tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        out[key] = (nc / calls, tt * 1e6 / calls, ct * 1e6 / calls)
    return out


def _sums(counts: dict[str, float], key: Callable[[str], str]) -> list[tuple[str, float]]:
    out: dict[str, float] = {}
    for name, n in counts.items():
        out[key(name)] = out.get(key(name), 0.0) + n
    return sorted(out.items(), key=lambda kv: -kv[1])


def _instructions(results: dict[str, Any], top: int) -> list[str]:
    """Bytecode instructions per call: by package, ours by module and function, and what
    wrapping adds elsewhere (all deterministic)."""
    bare_all: dict[str, float] = results[BARE]["by_function"]
    ours_all: dict[str, float] = results[OURS]["by_function"]
    bare_ops = dict(_sums(bare_all, package_of_label))
    ours_ops = dict(_sums(ours_all, package_of_label))
    lines = ["bytecode instructions by package     bare    wrapped      added"]
    for name in sorted(set(bare_ops) | set(ours_ops), key=lambda n: -ours_ops.get(n, 0)):
        b, o = bare_ops.get(name, 0.0), ours_ops.get(name, 0.0)
        lines.append(f"  {name:30s} {b:9.0f} {o:10.0f} {o - b:+10.0f}")
    b_total, o_total = sum(bare_ops.values()), sum(ours_ops.values())
    lines.append(
        f"  {'total':30s} {b_total:9.0f} {o_total:10.0f} {o_total - b_total:+10.0f}"
        f"  (x{o_total / b_total:.3f})"
    )
    ours_fn = {k: v for k, v in ours_all.items() if k.startswith("mcp_safe_retry")}
    lines += ["", "our instructions by module"]
    for module, n in _sums(ours_fn, lambda fn: fn.split(":", 1)[0]):
        lines.append(f"  {n:8.0f}  {module}")
    lines += ["", f"our instructions by function (top {top})"]
    for fn, n in sorted(ours_fn.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"  {n:8.0f}  {fn}")
    elsewhere = [
        (ours_all.get(k, 0.0) - bare_all.get(k, 0.0), k)
        for k in set(ours_all) | set(bare_all)
        if not k.startswith("mcp_safe_retry")
    ]
    lines += ["", f"instructions wrapping adds outside our code, by function (top {top})"]
    for n, fn in sorted(elsewhere, key=lambda t: -abs(t[0]))[:top]:
        lines.append(f"  {n:+8.0f}  {fn}")
    return lines


def _profiled(results: dict[str, Any], calls: int, top: int) -> list[str]:
    """cProfile on the CPU clock: call counts (exact) and time shares."""
    bare = _per_call(results[BARE]["stats"], calls)
    ours = _per_call(results[OURS]["stats"], calls)
    b_fn, o_fn = sum(v[0] for v in bare.values()), sum(v[0] for v in ours.values())
    b_t, o_t = sum(v[1] for v in bare.values()), sum(v[1] for v in ours.values())
    mine = {k: v for k, v in ours.items() if "mcp_safe_retry" in k[0]}
    own_self = sum(v[1] for v in mine.values())
    lines = [
        f"function calls (cProfile): bare {b_fn:.0f}, wrapped {o_fn:.0f} ({o_fn - b_fn:+.0f});"
        f" profiled CPU bare {b_t:.0f} µs, wrapped {o_t:.0f} µs (inflated by the profiler)",
        "",
        f"mcp-safe-retry's own code: {sum(v[0] for v in mine.values()):.0f} function calls, "
        f"{own_self:.0f} µs self time ({own_self / o_t:.1%} of the wrapped call's profiled"
        " CPU time)",
        "",
        "  by module (self µs, calls)",
    ]
    by_module: dict[str, list[float]] = {}
    for key, (nc, tt, _ct) in mine.items():
        acc = by_module.setdefault(_label(key).split(":", 1)[0], [0.0, 0.0])
        acc[0] += tt
        acc[1] += nc
    for module, (tt, nc) in sorted(by_module.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"    {tt:8.1f} µs {nc:6.0f}  {module}")
    for title, column in (("cumulative", 2), ("self", 1)):
        lines += ["", f"  top by {title} time (µs, calls)"]
        for key, value in sorted(mine.items(), key=lambda kv: -kv[1][column])[:top]:
            lines.append(f"    {value[column]:8.1f} µs {value[0]:6.1f}  {_label(key)}")
    changed = []
    for key in set(bare) | set(ours):
        b_v = bare.get(key, (0.0, 0.0, 0.0))
        o_v = ours.get(key, (0.0, 0.0, 0.0))
        if "mcp_safe_retry" not in key[0] and abs(o_v[0] - b_v[0]) >= 0.5:
            changed.append((o_v[0] - b_v[0], o_v[1] - b_v[1], key))
    lines += ["", "  outside our code, call counts wrapping changes (calls added, self µs added)"]
    for dn, dt, key in sorted(changed, key=lambda t: -abs(t[0]))[:top]:
        lines.append(f"    {dn:+6.1f} {dt:+8.1f} µs  {_label(key)}")
    return lines


def report(era: str, size: str, calls: int, results: dict[str, Any], top: int) -> list[str]:
    return [
        f"=== {era}, text-{size}: per call_tool ({calls} profiled calls each)",
        "",
        *_instructions(results, top),
        "",
        *_profiled(results, calls, top),
        "",
    ]


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


def _by_label(counts: Counter[CodeType], calls: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for code, n in counts.items():
        key = label(code)
        out[key] = out.get(key, 0.0) + n / calls
    return out


def measure(
    sessions: Sessions, name: str, size: int, calls: int, opcode_calls: int
) -> dict[str, Any]:
    """Instructions per call by package, and a cProfile of ``calls`` calls."""
    calls_of(sessions, name, size, max(10, calls // 4))(lambda: None, lambda: None)  # warm
    opcodes = count_opcodes(calls_of(sessions, name, size, opcode_calls))
    return {
        "by_function": _by_label(opcodes, opcode_calls),
        "stats": profile(calls_of(sessions, name, size, calls)),
    }


IN_PROCESS = {"2026-07-28": Case("json", 1024), "2025-11-25": Case("sse", 1024, eol=b"\r\n")}


def in_process(era: str, calls: int) -> list[str]:
    """The same count for ``async_httpx2``'s in-process call (a prebuilt 1 KiB answer of the
    era's kind, the 2026-07-28 headers): what the transport adds with nothing around it."""
    loop = asyncio.new_event_loop()
    case = IN_PROCESS[era]
    counted = {}
    try:
        for name, wrap in contenders().items():
            inner = PrebuiltTransport2(answer(case))
            client = httpx2.AsyncClient(transport=inner if wrap is None else wrap(inner))

            async def go(
                start: Callable[[], None],
                stop: Callable[[], None],
                n: int,
                post: Any = client.post,
            ) -> None:
                start()
                for _ in range(n):
                    await post(URL, content=REQUEST, headers=HEADERS)
                stop()

            loop.run_until_complete(go(lambda: None, lambda: None, 10))
            codes = count_opcodes(lambda a, b: loop.run_until_complete(go(a, b, calls)))
            counted[name] = {k: v / calls for k, v in by_package(codes).items()}
    finally:
        loop.close()
    bare, ours = sum(counted[IN_BARE].values()), sum(counted[OURS].values())
    mine = counted[OURS].get("mcp-safe-retry", 0.0)
    kind = "JSON" if case.kind == "json" else "SSE (CRLF)"
    return [
        f"in process (httpx2.AsyncClient, prebuilt 1 KiB {kind} answer): instructions per"
        f" call bare {bare:.0f}, wrapped {ours:.0f} ({ours - bare:+.0f}, x{ours / bare:.3f};"
        f" {mine:.0f} of them in mcp-safe-retry)",
        "",
    ]


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    calls = int(argv[argv.index("--calls") + 1]) if "--calls" in argv else (5 if quick else 200)
    top = int(argv[argv.index("--top") + 1]) if "--top" in argv else 25
    sizes = [a for a in argv if a in SIZES] or ["1k"]
    eras = [a for a in argv if a in ERAS]
    opcode_calls = max(1, min(calls, 5 if quick else 50))
    with official_server() as url:
        for era, mode in ERAS.items():
            if era not in (eras or ERAS):
                continue
            with Sessions(url, mode) as sessions:
                for size_name in sizes:
                    size = SIZES[size_name]
                    sessions.check(size)
                    results = {
                        name: measure(sessions, name, size, calls, opcode_calls)
                        for name in (BARE, OURS)
                    }
                    lines = report(era, size_name, calls, results, top)
                    if size_name == "1k":
                        lines[2:2] = in_process(era, opcode_calls)
                    print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
