"""SSE pass-through throughput in MB/s: a lazily generated stream read through the client."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

import mcp_safe_retry

from ._mock import PrebuiltTransport
from ._payloads import REQUEST, SSE_HEADERS, lazy_sse_chunks
from ._timing import clock, median
from .percall import POST_HEADERS, URL

EVENT_SIZES = (256, 1024, 16384)


def _client(wrapped: bool, size: int, event_bytes: int) -> httpx.Client:
    inner = PrebuiltTransport(lambda: lazy_sse_chunks(size, event_bytes), SSE_HEADERS)
    transport: httpx.BaseTransport = mcp_safe_retry.RetryTransport(inner) if wrapped else inner
    return httpx.Client(transport=transport)


def _async_client(wrapped: bool, size: int, event_bytes: int) -> httpx.AsyncClient:
    inner = PrebuiltTransport(lambda: lazy_sse_chunks(size, event_bytes), SSE_HEADERS)
    transport: httpx.AsyncBaseTransport = (
        mcp_safe_retry.AsyncRetryTransport(inner) if wrapped else inner
    )
    return httpx.AsyncClient(transport=transport)


def _read_sync(client: httpx.Client) -> tuple[int, float]:
    start = clock()
    total = 0
    with client.stream("POST", URL, content=REQUEST, headers=POST_HEADERS) as response:
        for chunk in response.iter_bytes():
            total += len(chunk)
    return total, clock() - start


async def _read_async(client: httpx.AsyncClient) -> tuple[int, float]:
    start = clock()
    total = 0
    async with client.stream("POST", URL, content=REQUEST, headers=POST_HEADERS) as response:
        async for chunk in response.aiter_bytes():
            total += len(chunk)
    return total, clock() - start


def run(*, size: int, rounds: int) -> list[dict[str, Any]]:
    """MB/s of bare httpx and of the transport, per event size, sync and async."""
    rows = []
    loop = asyncio.new_event_loop()
    try:
        for event_bytes in EVENT_SIZES:
            for mode in ("sync", "async"):
                rates: dict[str, list[float]] = {"httpx": [], "mcp-safe-retry": []}
                for _ in range(rounds):
                    for name, figures in rates.items():
                        wrapped = name == "mcp-safe-retry"
                        if mode == "sync":
                            total, took = _read_sync(_client(wrapped, size, event_bytes))
                        else:
                            client = _async_client(wrapped, size, event_bytes)
                            total, took = loop.run_until_complete(_read_async(client))
                        figures.append(total / took / 1e6)
                rows.append(
                    {
                        "event_bytes": event_bytes,
                        "mode": mode,
                        "stream_bytes": size,
                        "httpx_mb_s": median(rates["httpx"]),
                        "mcp_retry_mb_s": median(rates["mcp-safe-retry"]),
                    }
                )
    finally:
        loop.close()
    return rows
