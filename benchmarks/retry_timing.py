"""Retry timing: the backoff the engine schedules vs the delay that really passed."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

import mcp_safe_retry

from ._payloads import REQUEST
from .percall import POST_HEADERS, URL

OK = b'{"jsonrpc":"2.0","id":"%s","result":{"content":[],"isError":false}}'


class _FlakyTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """503 for the first ``failures`` requests of each call, then success; notes send times."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.sent: list[float] = []

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(time.perf_counter())
        if len(self.sent) <= self.failures:
            return httpx.Response(503, headers=[("content-type", "text/plain")], content=b"busy")
        wire = request.read().split(b'"id":', 1)[1].split(b",", 1)[0].strip(b'"')
        return httpx.Response(
            200, headers=[("content-type", "application/json")], content=OK % wire
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._answer(request)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return self._answer(request)


def _policy(initial: float) -> mcp_safe_retry.RetryPolicy:
    return mcp_safe_retry.RetryPolicy(
        max_retries=3,
        initial_backoff=initial,
        backoff_multiplier=2.0,
        jitter="none",
        tools={"search_documents": "read"},
    )


def _one(mode: str, initial: float) -> list[dict[str, Any]]:
    inner = _FlakyTransport(failures=3)
    policy = _policy(initial)
    if mode == "sync":
        with httpx.Client(transport=mcp_safe_retry.RetryTransport(inner, policy=policy)) as client:
            response = client.post(URL, content=REQUEST, headers=POST_HEADERS)
    else:

        async def go() -> httpx.Response:
            transport = mcp_safe_retry.AsyncRetryTransport(inner, policy=policy)
            async with httpx.AsyncClient(transport=transport) as client:
                return await client.post(URL, content=REQUEST, headers=POST_HEADERS)

        response = asyncio.run(go())
    record = mcp_safe_retry.get_record(response)
    if record is None or record.outcome != "TOOL_SUCCESS" or len(inner.sent) != 4:
        raise RuntimeError(f"retry benchmark went wrong: {record}")
    rows = []
    for attempt, sent_before, sent in zip(
        record.attempts[1:], inner.sent[:-1], inner.sent[1:], strict=True
    ):
        rows.append(
            {
                "retry": attempt.number - 1,
                "scheduled_s": attempt.delay,
                "actual_s": sent - sent_before,
            }
        )
    return rows


def run(*, repeats: int, initial: float = 0.01) -> list[dict[str, Any]]:
    """Per mode and retry: scheduled delay, and the median/max of the actual gap."""
    out = []
    for mode in ("sync", "async"):
        runs = [_one(mode, initial) for _ in range(repeats)]
        for index in range(len(runs[0])):
            gaps = sorted(r[index]["actual_s"] for r in runs)
            scheduled = runs[0][index]["scheduled_s"]
            out.append(
                {
                    "mode": mode,
                    "retry": runs[0][index]["retry"],
                    "scheduled_s": scheduled,
                    "actual_median_s": gaps[len(gaps) // 2],
                    "actual_max_s": gaps[-1],
                    "overshoot_median_ms": (gaps[len(gaps) // 2] - scheduled) * 1000,
                }
            )
    return out
