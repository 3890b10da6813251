"""The SSE decoder alone: µs to decode one stream, by line-end style and chunk size.

``python -m benchmarks.sse_decoder``: each stream is fed to a fresh ``SSEDecoder`` chunk by
chunk, then finished. With ``--baseline REV`` (``python -m benchmarks``), the decoder as it
was at REV runs in the same interleaved rounds, for before/after figures.
"""

from __future__ import annotations

import sys
from typing import Any

from mcp_safe_retry.core.sse import SSEDecoder

from ._payloads import json_response
from ._timing import Batch, clock, interleave
from .percall import BASELINE, baseline_module

__all__ = ["SHAPES", "run"]

CURRENT = "mcp-safe-retry"
EOLS = {"LF": b"\n", "CRLF": b"\r\n", "CR": b"\r"}
# name -> (event size, events, chunk size)
SHAPES = {
    "1 KiB event": (1024, 1, 1 << 20),
    "64 events of 1 KiB, 64 KiB chunks": (1024, 64, 65536),
    "1024 events of 256 B, 64 KiB chunks": (256, 1024, 65536),
    "128 KiB event, one chunk": (128 << 10, 1, 1 << 20),
    "128 KiB event, 512 B chunks": (128 << 10, 1, 512),
    "1 MiB event, 4 KiB chunks": (1 << 20, 1, 4096),
}


def stream(size: int, events: int, eol: bytes) -> bytes:
    event = b"event: message" + eol + b"data: " + json_response(size) + eol + eol
    return event * events


def _batch(decoder: Any, chunks: list[bytes], events: int) -> Batch:
    def batch(n: int) -> float:
        start = clock()
        for _ in range(n):
            d = decoder()
            for chunk in chunks:
                d.feed(chunk)
            d.finish()
        return clock() - start

    d = decoder()  # a checked decode first
    got = [e for chunk in chunks for e in d.feed(chunk)] + d.finish()
    # A large event's raw bytes may be the chunks it came in (a tuple).
    raw = [p for e in got for p in (e.raw if isinstance(e.raw, tuple) else (e.raw,))]
    if len(got) != events or b"".join(raw) != b"".join(chunks):
        raise RuntimeError("the decoder lost an event")
    return batch


def run(*, rounds: int, target: float, shapes: list[str] | None = None) -> list[dict[str, Any]]:
    """Per line-end style and shape: µs per stream of each decoder, ratio to the current one."""
    decoders: dict[str, Any] = {CURRENT: SSEDecoder}
    if BASELINE:
        decoders[BASELINE["label"]] = baseline_module("core.sse").SSEDecoder
    rows = []
    for shape in shapes or list(SHAPES):
        size, events, chunk = SHAPES[shape]
        for eol_name, eol in EOLS.items():
            body = stream(size, events, eol)
            chunks = [body[i : i + chunk] for i in range(0, len(body), chunk)]
            batches = {name: _batch(d, chunks, events) for name, d in decoders.items()}
            per_call = interleave(batches, rounds=rounds, target=target)
            cells = {}
            for name, times in per_call.items():
                us = sorted(times)[len(times) // 2] * 1e6
                cells[name] = {"us_per_stream": us, "mb_s": len(body) / us}
            rows.append({"shape": shape, "eol": eol_name, "bytes": len(body), "decoders": cells})
    return rows


def main(argv: list[str]) -> int:
    for row in run(rounds=3 if "--quick" in argv else 9, target=0.02):
        cells = "  ".join(
            f"{name} {c['us_per_stream']:8.1f} µs ({c['mb_s']:5.0f} MB/s)"
            for name, c in row["decoders"].items()
        )
        print(f"{row['shape']:36s} {row['eol']:5s} {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
