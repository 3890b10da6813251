"""The least a classifying transport can cost: ``python -m benchmarks.floor``.

``MinimalTransport`` does only what no classifying wrapper can skip for a JSON
``tools/call``: read the request's method and id, send it, read the answer, classify it and
keep one tuple per call. It retries nothing, records no attempts, tells no hooks. It comes
in three depths, measured beside bare httpx, mcp-safe-retry and httpx-retries in one run:

- ``classify``: mcp-safe-retry's own request parser and classifier (quick readers included);
- ``recognise``: only the request's id and method read with msgspec, and the answer's
  quick read (a full classification only when that is not sure);
- ``plumbing``: the same reads, hand-off and history, nothing parsed.

Together they show how mcp-safe-retry's cost splits into plumbing, classification, its
parser's and classifier's own glue, and everything else.

The async floors (``httpx2.AsyncClient``, 1 KiB JSON and 1 KiB SSE answers) are
``HandOnTransport``: the request's id and method read with msgspec, the JSON answer read
and quick-read for its id, the SSE answer passed on chunk by chunk by an async generator
that decodes its events and quick-reads each; one tuple per call into a bounded history.
It hands on the inner transport's own ``Response`` with its stream replaced, or (the
``rebuilt`` depth) builds a second ``Response`` as a wrapper that copies would.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import httpx
import httpx2
import msgspec

from mcp_safe_retry import classify
from mcp_safe_retry.core.jsonrpc import parse_request
from mcp_safe_retry.core.quick_read import Quick, quick_read
from mcp_safe_retry.core.sse import SSEDecoder

from . import async_httpx2
from ._timing import Batch, interleave
from .percall import URL, _wrap, contenders, mock_inner, summarise, sync_batch

__all__ = ["HandOnTransport", "MinimalTransport", "SessionHandOnTransport", "run", "run_async"]

DEPTHS = {
    "minimal sketch": "classify",
    "sketch, successes recognised": "recognise",
    "its plumbing alone": "plumbing",
}


class _Ids(msgspec.Struct):
    id: Any = None
    method: Any = None


_read_ids = msgspec.json.Decoder(_Ids).decode


class MinimalTransport(httpx.BaseTransport):
    """Classify every JSON-RPC answer and keep a bounded history; nothing more.

    ``depth`` is "classify", "recognise" or "plumbing" (see the module's docstring).
    """

    def __init__(self, inner: httpx.BaseTransport, *, depth: str = "classify") -> None:
        self._inner = inner
        self._depth = depth
        self._history: deque[tuple[Any, ...]] = deque(maxlen=1000)
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        content_type = request.headers.get("content-type", "")
        if request.method != "POST" or not content_type.startswith("application/json"):
            return self._inner.handle_request(request)
        sent = request.read()
        started = time.monotonic()
        response = self._inner.handle_request(request)
        stream = response.stream
        assert isinstance(stream, httpx.SyncByteStream)
        body = b"".join(stream)
        stream.close()
        response.stream = httpx.ByteStream(body)
        answer_type = response.headers.get("content-type")
        verdict = self._verdict(sent, response.status_code, body, answer_type)
        with self._lock:
            self._history.append((len(sent), answer_type, verdict, time.monotonic() - started))
        return response

    def _verdict(self, sent: bytes, status: int, body: bytes, content_type: str | None) -> Any:
        if self._depth == "plumbing":
            return None
        if self._depth == "recognise":
            ids = _read_ids(sent)
            if quick_read(body, ids.id, ids.method) is Quick.SUCCESS:
                return ids.method
            request_id, method = ids.id, ids.method
        else:
            facts = parse_request(sent)
            assert facts is not None
            request_id, method = facts.id, facts.method
        return classify(
            status, body, content_type=content_type, expected_id=request_id, method=method
        )


def _batches(case: str) -> dict[str, Batch]:
    batches: dict[str, Batch] = {}
    for name in (*contenders()[:2], *DEPTHS, *contenders()[2:]):
        if "stdlib" in name:
            continue
        inner, _ = mock_inner(case)
        if name in DEPTHS:
            transport: httpx.BaseTransport = MinimalTransport(inner, depth=DEPTHS[name])
        else:
            transport = _wrap(name, inner, False)
        batches[name] = sync_batch(httpx.Client(transport=transport), URL, name)
    return batches


def run(*, case: str = "json-1k", rounds: int = 15, target: float = 0.025) -> dict[str, Any]:
    """Median µs per call and ratio to bare httpx of each contender (sync, mock inner)."""
    return summarise(interleave(_batches(case), rounds=rounds, target=target))


class HandOnTransport(httpx2.AsyncBaseTransport):
    """The least an async classifying wrapper does; nothing retried, recorded or told.

    ``rebuild``: answer with a second ``Response`` instead of the inner one.
    """

    def __init__(self, inner: httpx2.AsyncBaseTransport, *, rebuild: bool = False) -> None:
        self._inner = inner
        self._rebuild = rebuild
        self._history: deque[tuple[Any, ...]] = deque(maxlen=1000)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        ids = _read_ids(request.content)
        started = time.monotonic()
        response = await self._inner.handle_async_request(request)
        inner = response.stream
        assert isinstance(inner, httpx2.AsyncByteStream)
        stream: httpx2.AsyncByteStream
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            stream = _PassThrough(inner, ids, self._history, started)
        else:
            body = b"".join([chunk async for chunk in inner])
            await inner.aclose()
            verdict = quick_read(body, ids.id, ids.method)
            self._history.append((ids.id, verdict, time.monotonic() - started))
            stream = httpx2.ByteStream(body)
        if self._rebuild:
            return httpx2.Response(
                response.status_code,
                headers=response.headers,
                stream=stream,
                extensions=response.extensions,
            )
        response.stream = stream
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class SessionHandOnTransport(HandOnTransport):
    """``HandOnTransport`` under a whole MCP session: what is not a POST (the GET stream, the
    DELETE that ends a session) has no JSON-RPC body and is passed through, as any wrapper
    must; a POST is handled as in process."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method != "POST":
            return await self._inner.handle_async_request(request)
        return await super().handle_async_request(request)


class _PassThrough(httpx2.AsyncByteStream):
    """An SSE body passed on chunk by chunk, its events decoded and quick-read."""

    def __init__(
        self,
        inner: httpx2.AsyncByteStream,
        ids: _Ids,
        history: deque[tuple[Any, ...]],
        started: float,
    ) -> None:
        self._inner = inner
        self._ids = ids
        self._history = history
        self._started = started

    async def __aiter__(self) -> AsyncIterator[bytes]:
        decoder = SSEDecoder()
        verdict = Quick.NOT_SURE
        request_id, method = self._ids.id, self._ids.method
        async for chunk in self._inner:
            for event in decoder.feed(chunk):
                if event.data:
                    verdict = quick_read(event.data, request_id, method)
            yield chunk
        self._history.append((request_id, verdict, time.monotonic() - self._started))

    async def aclose(self) -> None:
        await self._inner.aclose()


ASYNC_FLOORS = {
    "hand-on sketch": False,  # the value: rebuild
    "sketch, rebuilt Response": True,
}


def run_async(*, rounds: int = 15, target: float = 0.025) -> list[dict[str, Any]]:
    """The async floors beside bare httpx2 and mcp-safe-retry, for 1 KiB JSON and SSE."""
    wrappers = async_httpx2.contenders()
    for name, rebuild in ASYNC_FLOORS.items():
        wrappers[name] = lambda inner, rebuild=rebuild: HandOnTransport(inner, rebuild=rebuild)
    rows = []
    for case in ("json-1k", "sse-1k"):
        loop = asyncio.new_event_loop()
        try:
            batches = async_httpx2.batches(async_httpx2.CASES[case], loop, wrappers)
            per_call = interleave(batches, rounds=rounds, target=target)
        finally:
            loop.close()
        rows.append({"case": case, "contenders": summarise(per_call, bare=async_httpx2.BARE)})
    return rows


def _print(name: str, cell: dict[str, Any]) -> None:
    print(
        f"{name:30s} {cell['us_per_call']:7.1f} µs  x{cell['ratio']:.3f}"
        f"  {cell['added_us']:+.1f} µs"
    )


def main(argv: list[str]) -> int:
    case = argv[0] if argv else "json-1k"
    print(f"sync httpx, {case}")
    for name, cell in run(case=case).items():
        _print(name, cell)
    for row in run_async():
        print(f"async httpx2, {row['case']}")
        for name, cell in row["contenders"].items():
            _print(name, cell)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
