"""Bytecode instructions executed, by package: a deterministic counter for a noisy machine.

``sys.settrace`` with ``f_trace_opcodes`` (Python 3.11 has no ``sys.monitoring``) sees every
instruction of Python code in the tracing thread; it cannot see inside C code (orjson,
msgspec, pydantic-core, the socket), so it complements CPU time and never replaces it.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

__all__ = ["Bracket", "by_package", "count_opcodes", "label", "package_of", "package_of_label"]

# Runs some calls with start() before the first and stop() after the last, in one thread.
Bracket = Callable[[Callable[[], None], Callable[[], None]], None]

# Module path fragments -> the package a frame is charged to, first match wins.
PACKAGES = (
    ("mcp_safe_retry", "mcp-safe-retry"),
    ("mcp_retry_baseline", "mcp-safe-retry"),
    ("/httpx2/", "httpx2"),
    ("/httpcore2/", "httpcore2"),
    ("/httpx/", "httpx"),
    ("/httpcore/", "httpcore"),
    ("/mcp/", "mcp"),
    ("/pydantic", "pydantic"),
    ("/anyio/", "anyio"),
    ("/asyncio/", "asyncio"),
    ("/h11/", "h11"),
    ("/benchmarks/", "benchmark loop"),
)


def package_of(filename: str) -> str:
    for fragment, name in PACKAGES:
        if fragment in filename:
            return name
    return "stdlib/other"


def count_opcodes(run: Bracket) -> Counter[CodeType]:
    """Instructions executed per code object between ``start()`` and ``stop()`` of ``run``
    (``by_package`` and ``label`` sort them)."""
    counts: Counter[CodeType] = Counter()

    def local(frame: FrameType, event: str, arg: object) -> Any:
        if event == "opcode":
            counts[frame.f_code] += 1
        return local

    def new_frame(frame: FrameType, event: str, arg: object) -> Any:
        frame.f_trace_opcodes = True
        return local

    def start() -> None:
        sys.settrace(new_frame)
        # Frames already running (the event loop's) are traced from their next event on.
        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            frame.f_trace = local
            frame.f_trace_opcodes = True
            frame = frame.f_back

    def stop() -> None:
        sys.settrace(None)

    run(start, stop)
    return counts


def by_package(counts: Counter[CodeType]) -> Counter[str]:
    out: Counter[str] = Counter()
    for code, n in counts.items():
        out[package_of(code.co_filename)] += n
    return out


def package_of_label(text: str) -> str:
    """The package of a ``label()``."""
    return package_of("/" + text.split(":", 1)[0])


def label(code: CodeType) -> str:
    """``package/module.py:line(function)``, short."""
    filename = code.co_filename
    for marker in ("site-packages/", "/src/"):
        if marker in filename:
            filename = filename.split(marker, 1)[1]
            break
    return f"{filename}:{code.co_firstlineno}({code.co_qualname})"
