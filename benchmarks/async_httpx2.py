"""Cost per call where MCP clients are: ``httpx2.AsyncClient`` in process.

``python -m benchmarks.async_httpx2 [--quick] [CASE ...]``: a ``tools/call`` POSTed through
``httpx2.AsyncClient`` to an inner transport that hands back a prebuilt answer (its own
cost tiny and stable), bare and wrapped in ``mcp_safe_retry.httpx2.AsyncRetryTransport``
(and the baseline's, if one was loaded). Rounds interleave the contenders; medians.

SSE answers here are one event (the answer itself), as the official server sends a
``tools/call`` result; the chunked cases cut it as a socket read would, into 512-byte or
4 KiB pieces; the ``crlf`` cases end its lines in CRLF, as the official server does.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

import attrs
import httpx2

from mcp_safe_retry.httpx2 import AsyncRetryTransport

from ._payloads import CHUNK, JSON_HEADERS, REQUEST, SSE_HEADERS, json_response, sse_chunks
from ._timing import Batch, clock, interleave
from .percall import BASELINE, baseline_module, summarise

__all__ = ["BARE", "CASES", "Answer", "PrebuiltTransport2", "answer", "batches", "run"]

BARE = "httpx2"
URL = "http://mcp.test/mcp"
# What the mcp 2.x client sends for a tools/call on 2026-07-28.
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "search_documents",
}


@attrs.frozen
class Case:
    """An answer: JSON or one SSE event of about ``size`` bytes, cut into ``chunk``s."""

    kind: str
    size: int
    chunk: int = CHUNK
    eol: bytes = b"\n"


CASES = {
    "json-1k": Case("json", 1024),
    "json-64k": Case("json", 65536),
    "json-1m": Case("json", 1 << 20),
    "sse-1k": Case("sse", 1024),
    "sse-64k": Case("sse", 65536),
    "sse-1m": Case("sse", 1 << 20),
    "sse-64k crlf": Case("sse", 65536, eol=b"\r\n"),
    "sse-128k in 512 B": Case("sse", 128 << 10, chunk=512),
    "sse-128k in 512 B crlf": Case("sse", 128 << 10, chunk=512, eol=b"\r\n"),
    "sse-1m in 4 KiB": Case("sse", 1 << 20, chunk=4096),
    "sse-1m in 4 KiB crlf": Case("sse", 1 << 20, chunk=4096, eol=b"\r\n"),
}


@attrs.frozen
class Answer:
    headers: list[tuple[bytes, bytes]]
    chunks: list[bytes]


def answer(case: Case) -> Answer:
    body = json_response(case.size)
    if case.kind == "json":
        return Answer(JSON_HEADERS, [body])
    eol = case.eol
    event = b"event: message" + eol + b"data: " + body + eol + eol
    return Answer(SSE_HEADERS, sse_chunks(event, case.chunk))


class _Chunks(httpx2.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


class PrebuiltTransport2(httpx2.AsyncBaseTransport):
    """Answers every request with the same status, headers and body chunks (httpx2)."""

    def __init__(self, prebuilt: Answer) -> None:
        chunks = prebuilt.chunks
        self._stream = httpx2.ByteStream(chunks[0]) if len(chunks) == 1 else _Chunks(chunks)
        self._headers = prebuilt.headers

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers=self._headers, stream=self._stream)


async def _no_sleep(_: float) -> None:  # never called: every call succeeds at once
    raise AssertionError("no retry expected")


def contenders() -> dict[str, Any]:
    """Name -> a function wrapping an inner transport (None: the bare client)."""
    found: dict[str, Any] = {
        BARE: None,
        "mcp-safe-retry": lambda inner: AsyncRetryTransport(inner, sleep=_no_sleep),
    }
    if BASELINE:
        module = baseline_module("httpx2")
        found[BASELINE["label"]] = lambda inner: module.AsyncRetryTransport(inner, sleep=_no_sleep)
    return found


def client_batch(
    client: httpx2.AsyncClient, loop: asyncio.AbstractEventLoop, expected: int
) -> Batch:
    """A batch of n timed POSTs through ``client`` (after one checked call)."""
    response = loop.run_until_complete(client.post(URL, content=REQUEST, headers=HEADERS))
    if response.status_code != 200 or len(response.content) != expected:
        raise RuntimeError(f"unexpected answer: {response.status_code}, {len(response.content)}")

    async def calls(n: int) -> float:
        post = client.post
        start = clock()
        for _ in range(n):
            await post(URL, content=REQUEST, headers=HEADERS)
        return clock() - start

    return lambda n: loop.run_until_complete(calls(n))


def batches(
    case: Case, loop: asyncio.AbstractEventLoop, wrappers: dict[str, Any]
) -> dict[str, Batch]:
    prebuilt = answer(case)
    size = sum(map(len, prebuilt.chunks))
    found = {}
    for name, wrap in wrappers.items():
        inner = PrebuiltTransport2(prebuilt)
        transport = inner if wrap is None else wrap(inner)
        found[name] = client_batch(httpx2.AsyncClient(transport=transport), loop, size)
    return found


def run_case(case: str, *, rounds: int, target: float) -> dict[str, Any]:
    loop = asyncio.new_event_loop()
    try:
        per_call = interleave(
            batches(CASES[case], loop, contenders()), rounds=rounds, target=target
        )
    finally:
        loop.close()
    return summarise(per_call, bare=BARE)


def run(*, cases: list[str], rounds: int, target: float) -> list[dict[str, Any]]:
    return [
        {"case": case, "contenders": run_case(case, rounds=rounds, target=target)} for case in cases
    ]


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    cases = [a for a in argv if not a.startswith("--")] or list(CASES)
    for row in run(cases=cases, rounds=3 if quick else 15, target=0.004 if quick else 0.025):
        for name, cell in row["contenders"].items():
            print(
                f"{row['case']:24s} {name:22s} {cell['us_per_call']:9.1f} µs"
                f"  x{cell['ratio']:.3f}  {cell['added_us']:+.1f} µs"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
