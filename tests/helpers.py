"""Test helpers: scripted inner transports that count POSTs and closed responses."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

Reply = Callable[[dict[str, Any]], httpx.Response] | httpx.Response | Exception


def rpc(method: str = "tools/call", id: Any = 1, **params: Any) -> dict[str, Any]:
    """A JSON-RPC request body."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id is not None:
        message["id"] = id
    if params:
        message["params"] = params
    return message


def tool_call(name: str = "lookup", id: Any = 1, **arguments: Any) -> dict[str, Any]:
    return rpc("tools/call", id, name=name, arguments=arguments)


def ok_result(id: Any, *, is_error: bool = False, text: str = "ok") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id,
        "result": {"content": [{"type": "text", "text": text}], "isError": is_error},
    }


class TrackedStream(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A response body that remembers whether it was closed."""

    def __init__(self, chunks: list[bytes], log: list[TrackedStream], fail: Exception | None):
        self.chunks = chunks
        self.closed = False
        self.fail = fail
        log.append(self)

    def __iter__(self):  # type: ignore[no-untyped-def]
        yield from self.chunks
        if self.fail is not None:
            raise self.fail

    async def __aiter__(self):  # type: ignore[no-untyped-def]
        for chunk in self.chunks:
            yield chunk
        if self.fail is not None:
            raise self.fail

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        self.closed = True


class Script(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """An inner transport that answers POSTs from a script and records what it saw.

    Each script entry is a Response, an exception to raise, or a function of the parsed
    request body returning a Response. The last entry repeats.
    """

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[httpx.Request] = []
        self.streams: list[TrackedStream] = []
        self.closed = False

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests if r.content]

    @property
    def wire_ids(self) -> list[Any]:
        return [b.get("id") for b in self.bodies]

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        if isinstance(reply, Exception):
            raise reply
        if callable(reply) and not isinstance(reply, httpx.Response):
            reply = reply(json.loads(request.content) if request.content else {})
        return self._tracked(reply)

    def _tracked(self, response: httpx.Response) -> httpx.Response:
        chunks = getattr(response, "_chunks", None)
        if chunks is None:
            raw = b"".join(response.stream)  # type: ignore[arg-type]  # raw, still encoded
            chunks = [raw] if raw else []
        fail = getattr(response, "_fail", None)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=TrackedStream(list(chunks), self.streams, fail),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.read()
        return self._answer(request)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        return self._answer(request)

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        self.closed = True


def json_reply(
    status: int = 200, body: Any = None, **headers: str
) -> Callable[[dict[str, Any]], httpx.Response]:
    """A reply echoing the request's id into ``body`` (a function of the id, or a value)."""

    def reply(request: dict[str, Any]) -> httpx.Response:
        payload = body(request.get("id")) if callable(body) else body
        content = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        hdrs = {
            "content-type": "application/json",
            **{k.replace("_", "-"): v for k, v in headers.items()},
        }
        return httpx.Response(status, headers=hdrs, content=content)

    return reply


def sse_reply(
    events: Callable[[Any], list[bytes]], *, fail: Exception | None = None, status: int = 200
) -> Callable[[dict[str, Any]], httpx.Response]:
    """A reply streaming the given raw SSE chunks (a function of the request id)."""

    def reply(request: dict[str, Any]) -> httpx.Response:
        response = httpx.Response(status, headers={"content-type": "text/event-stream"})
        response._chunks = events(request.get("id"))  # type: ignore[attr-defined]
        response._fail = fail  # type: ignore[attr-defined]
        return response

    return reply


def sse_event(message: Any, event_id: str | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id else ""
    return f"event: message\n{head}data: {json.dumps(message)}\n\n".encode()


def status_reply(status: int, **headers: str) -> httpx.Response:
    return httpx.Response(status, headers={k.replace("_", "-"): v for k, v in headers.items()})


class Sleeps:
    """An injected sleep (sync and async) that records and never waits."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)

    async def asleep(self, seconds: float) -> None:
        self.calls.append(seconds)
