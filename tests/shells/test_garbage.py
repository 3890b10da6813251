"""A finished call leaves no reference cycle of ours behind: everything it made is freed by
reference counting, never left for the garbage collector to find (which costs every call)."""

from __future__ import annotations

import gc
import json

import httpx2
import pytest

from mcp_safe_retry import get_record
from mcp_safe_retry.httpx2 import AsyncRetryTransport

URL = "http://mcp.test/mcp"
CALL = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "lookup"}}
ANSWER = json.dumps(
    {"jsonrpc": "2.0", "id": 5, "result": {"content": [{"type": "text", "text": "ok"}]}}
).encode()


def answer(kind: str) -> httpx2.Response:
    if kind == "json":
        return httpx2.Response(200, headers={"content-type": "application/json"}, content=ANSWER)
    event = b"event: message\ndata: " + ANSWER + b"\n\n"
    headers = {"content-type": "text/event-stream"}
    if kind == "sse, sized":  # a Content-Length: handed on in a response of ours
        return httpx2.Response(200, headers=headers, content=event)
    return httpx2.Response(200, headers=headers, stream=httpx2.ByteStream(event))


def ours(garbage: list[object]) -> list[str]:
    return [type(o).__qualname__ for o in garbage if type(o).__module__.startswith("mcp_safe")]


@pytest.mark.parametrize("kind", ["json", "sse", "sse, sized"])
@pytest.mark.anyio
async def test_a_call_leaves_no_cycle(kind: str) -> None:
    transport = AsyncRetryTransport(httpx2.MockTransport(lambda _: answer(kind)))
    async with httpx2.AsyncClient(transport=transport) as client:
        await client.post(URL, json=CALL)  # warmed up: imports and caches made
        gc.collect()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for _ in range(3):
                response = await client.post(URL, json=CALL)
                assert ANSWER in response.content
                assert get_record(response).complete
            del response
            gc.collect()
            left = ours(gc.garbage)
        finally:
            gc.garbage.clear()
            gc.set_debug(0)
            gc.enable()
    assert left == []
