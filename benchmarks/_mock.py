"""Inner transports whose own cost is tiny and stable: they hand back prebuilt bodies."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Iterator

import httpx

__all__ = ["ChunkStream", "PrebuiltTransport"]


class ChunkStream(httpx.SyncByteStream, httpx.AsyncByteStream):
    """Yields the chunks a factory makes (a list is reused; a generator is made per call)."""

    def __init__(self, chunks: Callable[[], Iterable[bytes]]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks():
            yield chunk


class PrebuiltTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """Answers every request with the same status, headers and body chunks.

    ``chunks`` is a list of bytes (handed out again each call) or a zero-argument callable
    returning an iterable (for lazily generated streams).
    """

    def __init__(
        self,
        chunks: list[bytes] | Callable[[], Iterable[bytes]],
        headers: list[tuple[bytes, bytes]],
        status: int = 200,
    ) -> None:
        if isinstance(chunks, list):
            prebuilt = chunks
            self._stream: httpx.SyncByteStream | ChunkStream = (
                httpx.ByteStream(prebuilt[0])
                if len(prebuilt) == 1
                else ChunkStream(lambda: prebuilt)
            )
        else:
            self._stream = ChunkStream(chunks)
        self._headers = headers
        self._status = status
        self.calls = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        return httpx.Response(self._status, headers=self._headers, stream=self._stream)  # type: ignore[arg-type]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        return httpx.Response(self._status, headers=self._headers, stream=self._stream)  # type: ignore[arg-type]
