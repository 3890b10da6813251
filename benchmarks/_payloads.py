"""Deterministic MCP payloads: a tools/call request, JSON answers and SSE streams of a size."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator

__all__ = [
    "JSON_HEADERS",
    "REQUEST",
    "SSE_HEADERS",
    "json_response",
    "lazy_sse_chunks",
    "sse_chunks",
    "sse_stream",
]

REQUEST = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "search_documents",
            "arguments": {"query": "retry budget for idempotent reads", "limit": 10},
            "_meta": {"progressToken": "p-1"},
        },
    },
    separators=(",", ":"),
).encode()

JSON_HEADERS = [(b"content-type", b"application/json")]
SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]

CHUNK = 65536  # what httpcore hands on per read from a socket


def _message(request_id: int, rows: list[dict[str, object]], text: str) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {
            "content": [{"type": "text", "text": text}],
            "structuredContent": {"items": rows},
            "isError": False,
        },
    }


def _dumps(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


@functools.lru_cache(maxsize=32)
def json_response(size: int, request_id: int = 1) -> bytes:
    """A successful tools/call answer of exactly ``size`` bytes (or its minimum), about half
    structured rows and half prose, built in linear time."""
    rows: list[dict[str, object]] = []
    used = len(_dumps(_message(request_id, [], "")))
    while True:
        n = len(rows)
        row = {"id": n, "title": f"document {n}", "score": round(1 / (n + 1), 6)}
        grown = used + len(_dumps(row)) + (1 if rows else 0)
        if grown > size // 2 + 60:
            break
        rows.append(row)
        used = grown
    pad = max(0, size - used)
    text = ("lorem ipsum dolor sit amet " * (pad // 27 + 1))[:pad]
    return _dumps(_message(request_id, rows, text))


def _event(payload: dict[str, object]) -> bytes:
    return b"event: message\ndata: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def _notification(n: int, event_bytes: int) -> bytes:
    """A notifications/message log event of about ``event_bytes`` bytes."""
    payload = {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "logger": "tool", "data": {"step": n, "text": ""}},
    }
    pad = max(0, event_bytes - len(_event(payload)))
    payload["params"]["data"]["text"] = "x" * pad  # type: ignore[index]
    return _event(payload)


@functools.lru_cache(maxsize=8)
def sse_stream(size: int, event_bytes: int = 1024, final_bytes: int = 1024) -> bytes:
    """About ``size`` bytes of SSE: log notifications of ``event_bytes``, then the response."""
    final = b"event: message\ndata: " + json_response(final_bytes) + b"\n\n"
    parts: list[bytes] = []
    total = len(final)
    n = 0
    while total < size:
        event = _notification(n, event_bytes)
        parts.append(event)
        total += len(event)
        n += 1
    parts.append(final)
    return b"".join(parts)


def sse_chunks(body: bytes, chunk: int = CHUNK) -> list[bytes]:
    """Cut a stream as a socket would: fixed-size reads that split events anywhere."""
    return [body[i : i + chunk] for i in range(0, len(body), chunk)]


def lazy_sse_chunks(size: int, event_bytes: int = 1024, chunk: int = CHUNK) -> Iterator[bytes]:
    """The stream of ``sse_stream(size)`` generated on the fly, never held whole in memory.

    Every chunk is built from one repeated notification block, so this costs next to nothing
    and allocates only one chunk at a time.
    """
    event = _notification(0, event_bytes)
    per_chunk = max(1, chunk // len(event))
    block = event * per_chunk
    final = b"event: message\ndata: " + json_response(1024) + b"\n\n"
    sent = 0
    while sent + len(final) < size:
        yield block
        sent += len(block)
    yield final
