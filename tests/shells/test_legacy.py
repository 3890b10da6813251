"""HTTP+SSE event streams through the async shells (httpx and httpx2, asyncio and trio): a
GET's event stream goes on byte for byte; once its first event announced an endpoint, an
event put in for one of its POSTs reaches the reader at once, even while the reader waits on
the server, and only between two of the server's events.

The inner transport is a ``MockTransport`` whose GET answer streams chunks the test sends
one by one (a memory object stream), so the reader is really waiting when an event is put in.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import httpx2
import pytest

import mcp_safe_retry
from mcp_safe_retry import httpx2 as mcp_httpx2

LIBRARIES = {"httpx": (httpx, mcp_safe_retry), "httpx2": (httpx2, mcp_httpx2)}
URL = "http://legacy.test/sse"
ENDPOINT = b"event: endpoint\r\ndata: /messages/?session_id=abc\r\n\r\n"
PUT_IN = b'event: message\ndata: {"jsonrpc":"2.0","id":7,"error":{"code":-32010}}\n\n'

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _stream_class(http: Any) -> Any:
    class Chunks(http.AsyncByteStream):  # type: ignore[misc, name-defined]
        def __init__(self, receive: Any) -> None:
            self.receive = receive

        async def __aiter__(self) -> Any:
            async with self.receive:
                async for chunk in self.receive:
                    yield chunk

    return Chunks


@pytest.fixture(params=["httpx", "httpx2"])
def lib(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def _reading(lib: str, chunks: list[bytes], script: Any) -> tuple[bytes, Any]:
    """GET through the async retry transport; ``script(send, transport)`` feeds the stream
    (``send`` a chunk at a time) while the body is read; returns what the reader read."""
    http, package = LIBRARIES[lib]
    send, receive = anyio.create_memory_object_stream[bytes](0)
    stream = _stream_class(http)(receive)

    def handler(request: Any) -> Any:
        return http.Response(200, headers={"content-type": "text/event-stream"}, stream=stream)

    transport = package.AsyncRetryTransport(http.MockTransport(handler))
    read: list[bytes] = []
    async with http.AsyncClient(transport=transport) as client, client.stream("GET", URL) as got:

        async def reader() -> None:
            async for chunk in got.aiter_raw():
                read.append(chunk)

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(reader)
                async with send:
                    await script(send, transport, read)
    return b"".join(read), transport


async def _until(read: list[bytes], wanted: bytes) -> None:
    with anyio.fail_after(5):
        while wanted not in b"".join(read):
            await anyio.sleep(0.005)


async def test_a_stream_without_an_endpoint_goes_on_byte_for_byte(lib: str) -> None:
    chunks = [
        b": ping\n\n",
        b'event: message\ndata: {"a"',
        b":1}\n\nid: 5\ndata: x\n\n",
        b"data: tail",
    ]

    async def script(send: Any, transport: Any, read: list[bytes]) -> None:
        for chunk in chunks:
            await send.send(chunk)

    out, transport = await _reading(lib, chunks, script)
    assert out == b"".join(chunks)  # nothing else on the stream changes, an unfinished tail too
    assert not transport.engine.legacy.streams


async def test_an_event_put_in_reaches_a_waiting_reader_between_two_events(lib: str) -> None:
    partial, rest = b'event: message\ndata: {"method":"x",', b'"jsonrpc":"2.0"}\n\n'
    chunks = [ENDPOINT, b": ping\r\n\r\n", partial, rest]

    async def script(send: Any, transport: Any, read: list[bytes]) -> None:
        await send.send(ENDPOINT)
        await _until(read, ENDPOINT)
        (endpoint,) = transport.engine.legacy.streams
        assert endpoint == "http://legacy.test/messages/?session_id=abc"  # joined as the SDK joins
        deliver = transport.engine.legacy.stream(endpoint)
        deliver(PUT_IN)  # the reader waits on the server: it gets the event at once
        await _until(read, PUT_IN)
        await send.send(b": ping\r\n\r\n")
        await send.send(partial)  # half an event: held until it is whole
        await anyio.sleep(0.05)
        deliver(PUT_IN)  # goes on before it, never inside it
        await _until(read, b": ping\r\n\r\n" + PUT_IN)
        assert partial not in b"".join(read)
        await send.send(rest)
        await _until(read, partial + rest)

    out, transport = await _reading(lib, chunks, script)
    assert out == ENDPOINT + PUT_IN + b": ping\r\n\r\n" + PUT_IN + partial + rest
    assert not transport.engine.legacy.streams  # the stream ended: no longer registered


async def test_a_re_sent_requests_answer_is_handed_on_under_the_callers_id(lib: str) -> None:
    answer = b'event: message\ndata: {"jsonrpc":"2.0","id":"mcp-safe-retry-ab-1","result":{}}\n\n'
    other = b'event: message\ndata: {"jsonrpc":"2.0","id":"mcp-safe-retry-zz-9","result":{}}\n\n'

    async def script(send: Any, transport: Any, read: list[bytes]) -> None:
        await send.send(ENDPOINT)
        await _until(read, ENDPOINT)
        transport.engine.legacy.resent("mcp-safe-retry-ab-1", 3)
        await send.send(answer + other)

    out, _ = await _reading(lib, [], script)
    restored = b'event: message\ndata: {"jsonrpc":"2.0","id":3,"result":{}}\n\n'
    assert out == ENDPOINT + restored + other  # only the re-sent request's answer changes
