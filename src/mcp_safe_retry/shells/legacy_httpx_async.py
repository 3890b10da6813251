"""The HTTP+SSE transport's event streams (2024-11-05) in the async httpx shell: a GET's
event stream handed on as it came, into which a contained failure of one of its POSTs is
put, between two of the server's events, as soon as it is contained (``core/legacy.py``).

A GET answered with an event stream is read block by block (``Endpoint``): its bytes go on
unchanged and in order, an event never split. If its first event is ``endpoint``, the
stream is registered under the URL its POSTs go to, and from then on its chunks are read by
a pump task of its own, so that an event put in does not wait for the server's next chunk
(the reader may be waiting on it, minutes apart). Any other stream is handed on as it comes.

The pump is the one task here not under a task group of the caller's: the reader of a
response is a task of the SDK's, and the read it waits on cannot be interrupted without
ending the connection. It runs on asyncio as a task of the loop and on trio as a system
task; on any other backend there is no pump, and an event put in goes on with the server's
next chunk. It ends with the stream (read to its end, or closed).

Hand-written; ``scripts/unasync.py`` generates its httpx2 twin (sync shells have none: no
MCP client is sync, and their GET streams are handed on as they come).
"""

from __future__ import annotations

import asyncio
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable

import anyio
import httpx

from ..core.engine import Engine
from ..core.legacy import Endpoint
from .wiring import head_of

__all__ = ["watched"]

_EVENT_STREAM = "text/event-stream"


async def watched(
    engine: Engine, request: httpx.Request, inner: httpx.AsyncBaseTransport
) -> httpx.Response:
    """Send a request that is no call (a GET, a POST of no JSON-RPC message) and hand its
    answer on as it came; a GET's event stream (not content-encoded) read through
    ``LegacyStream``, so that it can take events."""
    response = await inner.handle_async_request(request)
    if request.method != "GET":
        return response
    head = head_of(response)
    stream = response.stream
    if (
        response.status_code != 200
        or head.encoded
        or not (head.content_type or "").startswith(_EVENT_STREAM)
        or not isinstance(stream, httpx.AsyncByteStream)
    ):
        return response
    response.stream = LegacyStream(stream, engine, request.url)
    return response


class LegacyStream(httpx.AsyncByteStream):
    """One GET's event stream (see the module docstring)."""

    _endpoint: str | None = None  # the URL its POSTs go to, once its first event said so
    _through = False  # not an HTTP+SSE stream: its chunks go on as they come
    _ended = False
    _closed = False
    _cancel: Callable[[], object] | None = None  # ends the pump, once there is one
    _task: object = None  # the pump's asyncio task, held while it runs

    def __init__(self, inner: httpx.AsyncByteStream, engine: Engine, url: httpx.URL) -> None:
        self._inner = inner
        self._chunks: AsyncIterator[bytes] = inner.__aiter__()
        self._engine = engine
        self._url = url
        self._reader = Endpoint(engine.legacy.caller_of)
        self._ready: deque[tuple[bytes, ...]] = deque()  # the server's blocks, to hand on
        self._block: deque[bytes] = deque()  # the rest of the block being handed on
        self._events: deque[bytes] = deque()  # put in: go on between two blocks
        self._arrived: deque[bytes | BaseException | None] = deque()  # the pump's chunks
        self._wake = anyio.Event()
        self._taken = anyio.Event()
        self._pumped = anyio.Event()  # the pump has ended

    def deliver(self, event: bytes) -> None:
        """Put one whole SSE event on the stream, after the block being handed on."""
        self._events.append(event)
        self._wake.set()

    def __aiter__(self) -> LegacyStream:
        return self

    async def __anext__(self) -> bytes:
        while True:
            if self._block:  # the rest of a block: never split by an event put in
                return self._block.popleft()
            if self._events:
                return self._events.popleft()
            if self._ready:
                pieces = self._ready.popleft()
                self._block.extend(pieces[1:])
                return pieces[0]
            if self._ended:
                raise StopAsyncIteration
            chunk = await self._next()
            if chunk is None:  # the end: what the reader still held goes on as it came
                self._ended = True
                self._stop()
                rest = b"" if self._through else self._reader.rest()
                if rest:
                    return rest
                continue
            if self._through:
                return chunk
            self._ready.extend(self._reader.pieces(chunk))
            if self._reader.decided and self._endpoint is None and not self._through:
                self._decided()

    def _decided(self) -> None:
        """The first event is in: an HTTP+SSE stream is registered and pumped; any other
        is handed on as it comes from now on."""
        uri = self._reader.uri
        if uri is None or self._reader.oversized:
            self._through = True
            rest = self._reader.rest()
            if rest:
                self._ready.append((rest,))
            return
        self._endpoint = str(self._url.join(uri))
        self._engine.legacy.opened(self._endpoint, self.deliver)
        self._cancel = self._spawn()

    async def _next(self) -> bytes | None:
        """The server's next chunk (None: the stream ended), or, with a pump, whatever came
        first: a chunk, or an event put in (then b"", and the loop hands it on)."""
        if self._cancel is None:
            try:
                return await self._chunks.__anext__()
            except StopAsyncIteration:
                return None
        while not self._arrived and not self._events:
            self._wake = anyio.Event()
            await self._wake.wait()
        if not self._arrived:
            return b""  # an event put in: handed on by the loop
        item = self._arrived.popleft()
        self._taken.set()  # the pump may read on
        if isinstance(item, BaseException):
            raise item
        return item

    async def _pump(self) -> None:
        """Read the server's chunks one ahead of the reader, until the stream ends."""
        try:
            async for chunk in self._chunks:
                self._taken = anyio.Event()
                self._arrived.append(chunk)
                self._wake.set()
                await self._taken.wait()
        except Exception as exc:  # handed to the reader, which raises it
            self._arrived.append(exc)
        else:
            self._arrived.append(None)
        finally:
            self._pumped.set()
            self._wake.set()

    def _spawn(self) -> Callable[[], object] | None:
        """Start the pump (see the module docstring); what ends it, or None: no pump."""
        try:  # which event loop runs this task (anyio has no public word for it)
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None:
            task = loop.create_task(self._pump())
            self._task = task
            return task.cancel
        trio = sys.modules.get("trio")  # imported already wherever trio runs
        if trio is not None and trio.lowlevel.in_trio_run():
            scope = trio.CancelScope()

            async def pumping() -> None:
                with scope:
                    await self._pump()

            trio.lowlevel.spawn_system_task(pumping)
            stop: Callable[[], object] = scope.cancel
            return stop
        return None  # pragma: no cover - another backend: events go with the next chunk

    def _stop(self) -> None:
        """The stream is over: unregistered, and its pump ended."""
        if self._endpoint is not None:
            self._engine.legacy.closed(self._endpoint, self.deliver)
        cancel, self._cancel = self._cancel, None
        if cancel is not None:
            cancel()
        self._task = None

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        pumping = self._cancel is not None
        self._stop()
        with anyio.CancelScope(shield=True):
            if pumping:  # its read is cancelled: the stream is closed once it stopped
                with anyio.move_on_after(5):
                    await self._pumped.wait()
            await self._inner.aclose()
