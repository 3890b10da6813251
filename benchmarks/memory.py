"""Memory: a long SSE stream through the transport, and the History after many calls."""

from __future__ import annotations

import gc
import random
import time
import tracemalloc
from typing import Any

import httpx

import mcp_safe_retry
from mcp_safe_retry.core.call import begin
from mcp_safe_retry.core.engine import Engine
from mcp_safe_retry.core.events import Head

from ._mock import PrebuiltTransport
from ._payloads import REQUEST, SSE_HEADERS, lazy_sse_chunks
from .percall import POST_HEADERS, URL


def stream_peak(size: int, *, wrapped: bool) -> dict[str, Any]:
    """Peak traced memory while ``size`` bytes of SSE flow through (never held whole)."""
    inner = PrebuiltTransport(lambda: lazy_sse_chunks(size), SSE_HEADERS)
    transport: httpx.BaseTransport = mcp_safe_retry.RetryTransport(inner) if wrapped else inner
    client = httpx.Client(transport=transport)
    gc.collect()
    tracemalloc.start()
    try:
        total = 0
        with client.stream("POST", URL, content=REQUEST, headers=POST_HEADERS) as response:
            for chunk in response.iter_bytes():
                total += len(chunk)
            record = mcp_safe_retry.get_record(response)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    if total < size:
        raise RuntimeError(f"stream cut short: {total} of {size} bytes")
    outcome = record.outcome if record is not None else None
    return {"stream_bytes": total, "peak_bytes": peak, "wrapped": wrapped, "outcome": outcome}


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def history_growth(calls: int, checkpoints: int = 4) -> dict[str, Any]:
    """Drive the engine ``calls`` times, each call with new arguments and one in ten failing
    (so the re-send detector fills up too), and watch the History, detector and RSS."""
    engine = Engine(
        clock=time.monotonic, wall_clock=time.time, rand=random.random, id_prefix="0a1b2c3d"
    )
    ok_head = Head(200, "application/json")
    bad_head = Head(500, None)
    ok_body = b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}'
    headers = {"content-type": "application/json"}
    marks: list[dict[str, Any]] = []
    step = max(1, calls // checkpoints)
    gc.collect()
    for i in range(1, calls + 1):
        call = begin(engine, REQUEST.replace(b'"limit":10', b'"limit":%d' % i), headers, {})
        assert call is not None
        call.start()
        if i % 10:
            call.headed(ok_head)
            call.received(ok_body)
        else:
            call.headed(bad_head)
            call.received(b"")
        if i % step == 0:
            gc.collect()
            marks.append(
                {
                    "calls": i,
                    "history_len": len(engine.history),
                    "resend_entries": len(engine.detector),
                    "rss_bytes": _rss(),
                }
            )
    return {"calls": calls, "maxlen": engine.history.maxlen, "marks": marks}


def run(*, small: int, large: int, calls: int) -> dict[str, Any]:
    streams = [
        stream_peak(size, wrapped=wrapped) for size in (small, large) for wrapped in (False, True)
    ]
    return {"streams": streams, "history": history_growth(calls)}
