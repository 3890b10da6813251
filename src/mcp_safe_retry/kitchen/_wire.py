"""Bytes the kitchen puts on the wire: framed JSON-RPC messages, SSE events, corruptions."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from mcp_safe_retry.kitchen._actions import MalformedKind
from mcp_safe_retry.kitchen._facts import SESSION_HEADER, RequestFacts

Headers = tuple[tuple[bytes, bytes], ...]
SSE_HEADERS: Headers = (
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
)
JSON_CONTENT_TYPE = b"application/json"
HTML_PAGE = b"<html><body><h1>200 OK</h1><p>Not an MCP endpoint.</p></body></html>"
_WRONG_ID_OFFSET = 1000


@attrs.frozen
class WireResponse:
    """A complete HTTP response: status, headers and the whole body."""

    status: int
    headers: Headers
    body: bytes

    @property
    def is_sse(self) -> bool:
        """Whether the body is an SSE stream."""
        return header(self.headers, b"content-type").startswith(b"text/event-stream")


def header(headers: Headers, name: bytes) -> bytes:
    """Return the first value of header `name` (lower-case), or b""."""
    return next((v for k, v in headers if k.lower() == name), b"")


def _compact(message: Mapping[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"))


def sse_event(data: str) -> bytes:
    """Return one `event: message` SSE frame, framed like the SDK frames its own."""
    return f"event: message\r\ndata: {data}\r\n\r\n".encode()


def session_headers(facts: RequestFacts) -> Headers:
    """Echo the request's session id, as the SDK does on every answer within a session."""
    if facts.session_id is None:
        return ()
    return ((SESSION_HEADER.encode(), facts.session_id.encode("latin-1")),)


def frame(message: Mapping[str, Any], facts: RequestFacts, *, sse: bool) -> WireResponse:
    """Return a 200 answer carrying `message` as JSON or as a single-event SSE stream."""
    if sse:
        return WireResponse(200, SSE_HEADERS + session_headers(facts), sse_event(_compact(message)))
    headers = ((b"content-type", JSON_CONTENT_TYPE), *session_headers(facts))
    return WireResponse(200, headers, _compact(message).encode())


def notification_events(facts: RequestFacts, count: int) -> list[bytes]:
    """Return `count` SSE notification events such as a real server sends mid-call.

    Progress when the caller sent a progressToken (its only legitimate use), else log
    messages.
    """
    events = []
    for n in range(1, count + 1):
        if facts.progress_token is not None:
            params: dict[str, Any] = {
                "progressToken": facts.progress_token,
                "progress": n,
                "message": f"kitchen event {n}",
            }
            message = {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}
        else:
            params = {"level": "info", "logger": "kitchen", "data": f"kitchen event {n}"}
            message = {"jsonrpc": "2.0", "method": "notifications/message", "params": params}
        events.append(sse_event(_compact(message)))
    return events


def _sse_data(body: bytes) -> list[str]:
    """Return the data of each SSE event in a complete stream (multi-line data joined)."""
    text = body.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    out = []
    for block in text.split("\n\n"):
        lines = [
            line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")
        ]
        if lines:
            out.append("\n".join(lines))
    return out


def find_response(captured: WireResponse) -> dict[str, Any] | None:
    """Return the JSON-RPC response (result or error) inside a captured answer, if any."""
    candidates = (
        _sse_data(captured.body) if captured.is_sse else [captured.body.decode("utf-8", "replace")]
    )
    for data in reversed(candidates):
        try:
            message = json.loads(data)
        except ValueError:
            continue
        if isinstance(message, dict) and ("result" in message or "error" in message):
            return message
    return None


def _corrupt_text(kind: MalformedKind, message: dict[str, Any]) -> str:
    """Return the text of `message` corrupted the way `kind` names."""
    if kind == "invalid_json":
        text = _compact(message)
        # Cut mid-document: what a proxy that truncates a body produces.
        return text[: len(text) // 2]
    corrupted = dict(message)
    if kind == "wrong_id":
        old = message.get("id")
        corrupted["id"] = old + _WRONG_ID_OFFSET if isinstance(old, int) else f"{old}-not-yours"
    elif kind == "missing_jsonrpc":
        corrupted.pop("jsonrpc", None)
    elif kind == "result_and_error":
        corrupted.setdefault("result", {"content": [], "isError": False})
        corrupted.setdefault("error", {"code": -32603, "message": "Internal error"})
    return _compact(corrupted)


def mangle(kind: MalformedKind, captured: WireResponse, facts: RequestFacts) -> WireResponse:
    """Return the real server's answer corrupted the way `kind` names.

    The framing (JSON or SSE) and the session header of the real answer are kept, so only
    the named property is wrong. An answer holding no JSON-RPC response passes unchanged.
    """
    if kind == "wrong_content_type":
        headers = ((b"content-type", b"text/html; charset=utf-8"), *session_headers(facts))
        return WireResponse(200, headers, HTML_PAGE)
    if kind == "empty_body":
        headers = ((b"content-type", JSON_CONTENT_TYPE), *session_headers(facts))
        return WireResponse(200, headers, b"")
    message = find_response(captured)
    if message is None:
        return captured
    text = _corrupt_text(kind, message)
    kept = tuple(
        (k, v) for k, v in captured.headers if k.lower() not in (b"content-length", b"content-type")
    )
    if captured.is_sse:
        return WireResponse(captured.status, SSE_HEADERS[:1] + kept, sse_event(text))
    return WireResponse(
        captured.status, ((b"content-type", JSON_CONTENT_TYPE), *kept), text.encode()
    )
