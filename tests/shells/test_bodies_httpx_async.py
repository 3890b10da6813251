"""The bodies of the async shells (shells/bodies_httpx_async.py and its httpx2 twin): an SSE
answer handed on as it flows closes what it iterates when the reader closes it; an answer
being read when its call is cancelled is closed by the executor."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from types import ModuleType

import anyio
import httpx
import httpx2
import pytest

import mcp_safe_retry
import mcp_safe_retry.httpx2
from tests.helpers import ok_result, tool_call

pytestmark = pytest.mark.anyio
URL = "http://a.test/mcp"


def _generator_stream(library: ModuleType, closed: list[str]) -> object:
    """An SSE body whose ``__aiter__`` is an async generator (as httpcore's streams are)
    that notes when it is closed."""

    class Events(library.AsyncByteStream):  # type: ignore[name-defined,misc]
        async def __aiter__(self) -> AsyncIterator[bytes]:
            try:
                yield b"event: message\ndata: " + json.dumps(ok_result(1)).encode() + b"\n\n"
                yield b": the server keeps the stream open\n\n"
            finally:
                closed.append("generator")

        async def aclose(self) -> None:
            closed.append("stream")

    return Events()


@pytest.mark.parametrize(
    ("library", "shells"),
    [
        pytest.param(httpx, mcp_safe_retry, id="httpx"),
        pytest.param(httpx2, mcp_safe_retry.httpx2, id="httpx2"),
    ],
)
async def test_a_reader_that_stops_early_closes_the_inner_generator_at_once(
    library: ModuleType, shells: ModuleType
) -> None:
    closed: list[str] = []

    def server(request: object) -> object:
        return library.Response(
            200,
            headers={"content-type": "text/event-stream"},
            stream=_generator_stream(library, closed),
        )

    transport = shells.AsyncRetryTransport(library.MockTransport(server))
    async with library.AsyncClient(transport=transport) as client:
        request = client.build_request(
            "POST", URL, json=tool_call(), headers={"accept": "text/event-stream"}
        )
        response = await client.send(request, stream=True)
        async for chunk in response.aiter_raw():
            assert b"event: message" in chunk
            break  # the reader has its answer and stops, as the SDK does
        await response.aclose()
        # Closed with the response, not later by the event loop's finalizer.
        assert closed == ["generator", "stream"]


def _stalled_gzip_stream(library: ModuleType, closed: list[str]) -> object:
    """A content-encoded JSON body that stops halfway and never ends, noting its close."""
    import gzip

    packed = gzip.compress(json.dumps(ok_result(1)).encode())

    class Stalled(library.AsyncByteStream):  # type: ignore[name-defined,misc]
        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield packed[: len(packed) // 2]
            await anyio.sleep_forever()

        async def aclose(self) -> None:
            closed.append("stream")

    return Stalled()


@pytest.mark.parametrize(
    ("library", "shells"),
    [
        pytest.param(httpx, mcp_safe_retry, id="httpx"),
        pytest.param(httpx2, mcp_safe_retry.httpx2, id="httpx2"),
    ],
)
async def test_a_call_cancelled_while_its_answer_is_read_closes_that_answer(
    library: ModuleType, shells: ModuleType
) -> None:
    """The executor closes a response it does not hand back, on a cancellation too (read
    decoded here, so nothing else closes it)."""
    closed: list[str] = []

    def server(request: object) -> object:
        headers = {"content-type": "application/json", "content-encoding": "gzip"}
        return library.Response(200, headers=headers, stream=_stalled_gzip_stream(library, closed))

    transport = shells.AsyncRetryTransport(library.MockTransport(server))
    async with library.AsyncClient(transport=transport) as client:
        with anyio.move_on_after(0.2) as scope:
            await client.post(URL, json=tool_call())
    assert scope.cancelled_caught
    assert closed == ["stream"]
