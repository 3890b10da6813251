"""A JSON answer read whole and handed on (shells/bodies_httpx_async.read_whole and its
twins): the caller gets the server's own response, its body put back, read and timed by the
caller's client as without us; the server's stream is closed once read."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from types import ModuleType
from typing import Any

import httpx
import httpx2
import pytest

import mcp_safe_retry
import mcp_safe_retry.httpx2
from mcp_safe_retry import get_record
from tests.helpers import ok_result, tool_call

URL = "http://a.test/mcp"
BODY = json.dumps(ok_result(1)).encode()
LIBRARIES = [
    pytest.param(httpx, mcp_safe_retry, id="httpx"),
    pytest.param(httpx2, mcp_safe_retry.httpx2, id="httpx2"),
]


def _server(library: ModuleType, seen: list[Any], closed: list[bool]) -> Any:
    """A transport whose JSON answer streams in two chunks (not read beforehand, as a mock's
    ``content=`` answer is), noting the response it made and its stream's close."""

    class Chunks(library.SyncByteStream, library.AsyncByteStream):  # type: ignore[misc]
        def __iter__(self) -> Iterator[bytes]:
            yield from (BODY[:10], BODY[10:])

        async def __aiter__(self) -> AsyncIterator[bytes]:
            for chunk in (BODY[:10], BODY[10:]):
                yield chunk

        def close(self) -> None:
            closed.append(True)

        async def aclose(self) -> None:
            closed.append(True)

    def answer(request: Any) -> Any:
        response = library.Response(
            200, headers={"content-type": "application/json"}, stream=Chunks()
        )
        seen.append(response)
        return response

    return library.MockTransport(answer)


@pytest.mark.parametrize(("library", "shells"), LIBRARIES)
def test_a_json_answer_read_whole_is_the_servers_response_read_as_without_us(
    library: ModuleType, shells: ModuleType
) -> None:
    seen: list[Any] = []
    closed: list[bool] = []
    transport = shells.RetryTransport(_server(library, seen, closed))
    with library.Client(transport=transport) as client:
        response = client.post(URL, json=tool_call())
    assert response is seen[0]  # handed on itself, head and all
    assert response.content == BODY
    assert response.elapsed.total_seconds() >= 0  # timed by the client, as it is unwrapped
    assert closed == [True]  # the server's stream, closed once read whole
    assert get_record(response) is not None
    assert b"".join(response.stream) == b"".join(response.stream) == BODY  # put back whole


@pytest.mark.anyio
@pytest.mark.parametrize(("library", "shells"), LIBRARIES)
async def test_an_async_json_answer_read_whole_is_the_servers_response_read_as_without_us(
    library: ModuleType, shells: ModuleType
) -> None:
    seen: list[Any] = []
    closed: list[bool] = []
    transport = shells.AsyncRetryTransport(_server(library, seen, closed))
    async with library.AsyncClient(transport=transport) as client:
        response = await client.post(URL, json=tool_call())
        streamed = await client.send(
            client.build_request("POST", URL, json=tool_call()), stream=True
        )
        chunks = [chunk async for chunk in streamed.aiter_raw()]
        await streamed.aclose()
    assert response is seen[0]
    assert response.content == BODY
    assert response.elapsed.total_seconds() >= 0
    assert chunks == [BODY]  # one chunk, as read
    assert streamed.elapsed.total_seconds() >= 0
    assert closed == [True, True]
    assert get_record(response) is not None
    again = [chunk async for chunk in response.stream]  # the body put back can be read again
    assert again == [chunk async for chunk in response.stream] == [BODY]
