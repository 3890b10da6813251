"""Cost per call: bare httpx vs mcp-retry vs httpx-retries over the same inner transport."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import httpx_retries

import mcp_retry

from ._mock import PrebuiltTransport
from ._payloads import JSON_HEADERS, REQUEST, SSE_HEADERS, json_response, sse_chunks, sse_stream
from ._timing import Batch, clock, interleave, median

__all__ = ["CASES", "CONTENDERS", "run_case", "summarise"]

URL = "http://mcp.test/mcp"
POST_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
CONTENDERS = ("httpx", "mcp-retry", "httpx-retries")


def _no_sleep(_: float) -> None:  # never called: every call succeeds at once
    raise AssertionError("no retry expected")


async def _no_async_sleep(_: float) -> None:
    raise AssertionError("no retry expected")


def _case(name: str) -> tuple[list[bytes], list[tuple[bytes, bytes]], int]:
    """Inner chunks, headers and body size of a benchmark case."""
    kind, size = name.split("-")
    nbytes = {"1k": 1024, "64k": 65536, "1m": 1 << 20}[size]
    if kind == "json":
        return [json_response(nbytes)], JSON_HEADERS, nbytes
    body = sse_stream(nbytes)
    return sse_chunks(body), SSE_HEADERS, len(body)


CASES = ("json-1k", "json-64k", "sse-1m")


def _wrap(contender: str, inner: PrebuiltTransport, is_async: bool) -> Any:
    if contender == "httpx":
        return inner
    if contender == "mcp-retry":
        if is_async:
            return mcp_retry.AsyncRetryTransport(inner, sleep=_no_async_sleep)
        return mcp_retry.RetryTransport(inner, sleep=_no_sleep)
    retry = httpx_retries.Retry(total=2, allowed_methods=["POST"])
    return httpx_retries.RetryTransport(transport=inner, retry=retry)


def sync_batches(case: str) -> dict[str, Batch]:
    chunks, headers, size = _case(case)
    batches: dict[str, Batch] = {}
    for contender in CONTENDERS:
        client = httpx.Client(transport=_wrap(contender, PrebuiltTransport(chunks, headers), False))
        response = client.post(URL, content=REQUEST, headers=POST_HEADERS)
        assert response.status_code == 200 and len(response.content) == size, contender

        def batch(n: int, client: httpx.Client = client) -> float:
            post = client.post
            start = clock()
            for _ in range(n):
                post(URL, content=REQUEST, headers=POST_HEADERS)
            return clock() - start

        batches[contender] = batch
    return batches


def async_batches(case: str, loop: asyncio.AbstractEventLoop) -> dict[str, Batch]:
    chunks, headers, size = _case(case)
    batches: dict[str, Batch] = {}
    for contender in CONTENDERS:
        client = httpx.AsyncClient(
            transport=_wrap(contender, PrebuiltTransport(chunks, headers), True)
        )
        response = loop.run_until_complete(client.post(URL, content=REQUEST, headers=POST_HEADERS))
        assert response.status_code == 200 and len(response.content) == size, contender

        async def run(n: int, client: httpx.AsyncClient) -> float:
            post = client.post
            start = clock()
            for _ in range(n):
                await post(URL, content=REQUEST, headers=POST_HEADERS)
            return clock() - start

        def batch(n: int, client: httpx.AsyncClient = client) -> float:
            return loop.run_until_complete(run(n, client))

        batches[contender] = batch
    return batches


def summarise(per_call: dict[str, list[float]]) -> dict[str, Any]:
    """Median µs per call of each contender and the median of per-round ratios to httpx."""
    bare = per_call["httpx"]
    out: dict[str, Any] = {}
    for name, times in per_call.items():
        ratios = [t / b for t, b in zip(times, bare, strict=True)]
        out[name] = {
            "us_per_call": median(times) * 1e6,
            "ratio": median(ratios),
            "rounds": len(times),
        }
    return out


def run_case(
    case: str, *, mode: str, rounds: int, target: float, batches_for: Callable[..., Any] | None = None
) -> dict[str, Any]:
    if mode == "sync":
        per_call = interleave(sync_batches(case), rounds=rounds, target=target)
    else:
        loop = asyncio.new_event_loop()
        try:
            per_call = interleave(async_batches(case, loop), rounds=rounds, target=target)
        finally:
            loop.close()
    return summarise(per_call)


if __name__ == "__main__":
    import sys

    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    for mode in ("sync", "async"):
        for case in CASES:
            result = run_case(case, mode=mode, rounds=rounds, target=0.03)
            cells = "  ".join(
                f"{k}: {v['us_per_call']:9.1f}us x{v['ratio']:.3f}" for k, v in result.items()
            )
            print(f"{mode:5} {case:8} {cells}", flush=True)
