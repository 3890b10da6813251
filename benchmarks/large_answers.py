"""What a large answer costs in memory: copies, not microseconds (a loaded machine's timings
are noise; the bytes a call touches are not).

    PYTHONPATH=src python -m benchmarks.large_answers [--calls N]

In process (``httpx2.AsyncClient`` over a prebuilt answer in 64 KiB chunks, read as a
stream the way an SDK's reader does), bare and wrapped: the peak of memory traced during
one call, in multiples of the answer's size, and the minor page faults per call (fresh
memory the kernel had to hand over: each copy of a large answer costs its size in faults).
"""

from __future__ import annotations

import asyncio
import gc
import resource
import sys
import tracemalloc
from typing import Any

import httpx2

from ._payloads import REQUEST
from .async_httpx2 import BARE, HEADERS, URL, Case, PrebuiltTransport2, answer, contenders
from .official import OURS

__all__ = ["CASES", "main", "measure"]

CASES = {"json 1 MiB": Case("json", 1 << 20), "sse 1 MiB (CRLF)": Case("sse", 1 << 20, eol=b"\r\n")}


async def _call(client: httpx2.AsyncClient) -> int:
    size = 0
    async with client.stream("POST", URL, content=REQUEST, headers=HEADERS) as response:
        async for chunk in response.aiter_bytes():
            size += len(chunk)
    return size


def measure(case: Case, wrap: Any, calls: int) -> dict[str, float]:
    """Peak traced bytes of one call / answer size, and minor faults per call."""
    inner = PrebuiltTransport2(answer(case))
    loop = asyncio.new_event_loop()
    try:
        client = httpx2.AsyncClient(transport=inner if wrap is None else wrap(inner))
        size = loop.run_until_complete(_call(client))  # warm
        gc.collect()
        tracemalloc.start()
        try:
            loop.run_until_complete(_call(client))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        gc.collect()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(calls):
            loop.run_until_complete(_call(client))
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
        loop.run_until_complete(client.aclose())
    finally:
        loop.close()
    return {"peak": peak / size, "faults": faults / calls}


def main(argv: list[str]) -> int:
    calls = int(argv[argv.index("--calls") + 1]) if "--calls" in argv else 20
    wraps = contenders()
    print("one large answer read as a stream, in process (httpx2): peak memory / answer size,")
    print("minor page faults per call (4 KiB pages; 1 MiB fresh = ~256)")
    print(f"{'answer':>18}  {'bare peak':>9}  {'ours peak':>9}  {'bare faults':>11}  {'ours':>6}")
    for name, case in CASES.items():
        bare = measure(case, wraps[BARE], calls)
        ours = measure(case, wraps[OURS], calls)
        print(
            f"{name:>18}  x{bare['peak']:8.2f}  x{ours['peak']:8.2f}"
            f"  {bare['faults']:11.0f}  {ours['faults']:6.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
