"""Where a large answer should be classified by its envelope: the cost of ``quick_read`` by
its envelope over the cost of reading the whole body's shape, by body size and shape.

    PYTHONPATH=src python -m benchmarks.envelope [--rounds N]

Two shapes of tool result: one text item (the usual large answer: a file, a page) and
many small items (the envelope walk gives up past ``envelope.TOKENS`` and the body is read
as below the size: the figure is what giving up costs). Each round times both readers on
the same body, interleaved; the figure is the median of the per-round ratios (<1: the
envelope is cheaper). Ratios, not microseconds: the machine this runs on may be loaded.
"""

from __future__ import annotations

import json
import sys

from mcp_safe_retry.core import quick_read as _quick
from mcp_safe_retry.core.quick_read import Quick, quick_read

from ._timing import clock, median

__all__ = ["SIZES", "body", "main", "ratio"]

SIZES = (4 << 10, 16 << 10, 64 << 10, 128 << 10, 256 << 10, 1 << 20, 4 << 20)
SHAPES = ("one text item", "items of 100 B")


def body(size: int, shape: str) -> bytes:
    """A tools/call answer of about ``size`` bytes."""
    if shape == "one text item":
        content = [{"type": "text", "text": "x" * size}]
    else:
        content = [{"type": "text", "text": "y" * 100}] * max(1, size // 130)
    message = {"jsonrpc": "2.0", "id": 1, "result": {"content": content, "isError": False}}
    return json.dumps(message, separators=(",", ":")).encode()


def _time(answer: bytes, threshold: int, n: int) -> float:
    _quick.ENVELOPE_BYTES = threshold  # type: ignore[misc]
    start = clock()
    for _ in range(n):
        quick_read(answer, 1, "tools/call")
    return clock() - start


ENVELOPE, WHOLE = 0, 1 << 62  # thresholds: every body by its envelope, none


def ratio(answer: bytes, rounds: int) -> tuple[float, Quick]:
    """Median of per-round (by envelope) / (whole shape) time ratios, and the envelope
    reader's verdict."""
    n = max(1, (4 << 20) // len(answer))
    ratios = []
    kept = _quick.ENVELOPE_BYTES
    try:
        for i in range(rounds):
            pair = (ENVELOPE, WHOLE) if i % 2 else (WHOLE, ENVELOPE)
            took = {threshold: _time(answer, threshold, n) for threshold in pair}
            ratios.append(took[ENVELOPE] / took[WHOLE])
        _quick.ENVELOPE_BYTES = ENVELOPE  # type: ignore[misc]
        verdict = quick_read(answer, 1, "tools/call")
    finally:
        _quick.ENVELOPE_BYTES = kept  # type: ignore[misc]
    return median(ratios), verdict


def main(argv: list[str]) -> int:
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 9
    print("quick_read by its envelope / by the whole shape (median of per-round ratios)")
    print(f"{'size':>8}  " + "  ".join(f"{shape:>22}" for shape in SHAPES))
    for size in SIZES:
        cells = []
        for shape in SHAPES:
            value, verdict = ratio(body(size, shape), rounds)
            cells.append(f"x{value:5.2f} ({verdict.name.lower():>8})")
        label = f"{size >> 10} KiB" if size < 1 << 20 else f"{size >> 20} MiB"
        print(f"{label:>8}  " + "  ".join(f"{cell:>22}" for cell in cells))
    print(f"threshold in use: {_quick.ENVELOPE_BYTES >> 10} KiB (core/envelope.py)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
