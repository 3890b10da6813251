"""Deterministic MCP payloads: a tools/call request, JSON answers and SSE streams of a size."""

from __future__ import annotations

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


def _result(size: int, request_id: int = 1) -> dict[str, object]:
    """A successful tools/call result of about ``size`` bytes: half prose, half structure."""
    rows: list[dict[str, object]] = []
    text = ""
    message: dict[str, object] = {}
    # Grow until the serialised message reaches the size (structure and text alike).
    while True:
        message = {
            "jsonrpc": "2.0",
            "id": request_id,
            "result": {
                "content": [{"type": "text", "text": text}],
                "structuredContent": {"items": rows},
                "isError": False,
            },
        }
        current = len(json.dumps(message, separators=(",", ":")))
        if current >= size:
            return message
        gap = size - current
        if gap > 120 and len(rows) * 60 < size // 2:
            n = len(rows)
            rows.append({"id": n, "title": f"document {n}", "score": round(1 / (n + 1), 6)})
        else:
            text += "lorem ipsum dolor sit amet "[: max(1, min(gap, 27))]


def json_response(size: int, request_id: int = 1) -> bytes:
    return json.dumps(_result(size, request_id), separators=(",", ":")).encode()


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
