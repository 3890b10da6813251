"""The bodies of the async httpx shell: one read whole, an SSE one handed on as it flows,
and the responses that hand them on. Carried out as the call's commands say: nothing here
decides.

Hand-written; ``scripts/unasync.py`` generates its sync and httpx2 twins.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import NamedTuple

import httpx

from ..core.call import Call
from ..core.commands import (
    Ask,
    Command,
    EndStream,
    HeaderEdits,
    Send,
    Sleep,
    Stream,
)
from ..core.events import Head
from ..core.extensions import RECORD_EXTENSION
from ..core.stream import StreamTracker
from ..instrumentation.hooks import publish
from .errors_httpx import BodyTooLarge, describe_error, failure
from .wiring import RESPONSE_HEADERS, header_values, strip_headers

__all__ = [
    "Ended",
    "Exchange",
    "answered",
    "edited",
    "head_of",
    "read_whole",
    "streaming",
    "with_body",
]

_ENCODING_HEADERS = (b"content-encoding", b"content-length", b"transfer-encoding")


class Ended(NamedTuple):
    """What one exchange ends with: the command, the response it concerns and that
    response's head, and the body read (None: the response was read in place, or not)."""

    command: Command
    response: httpx.Response | None = None
    head: Head | None = None
    body: bytes | None = None


Exchange = Callable[[Call, httpx.Request, Command], Awaitable[Ended]]
"""Runs a call's commands until one ends the exchange (the transport's loop)."""


def streaming(
    call: Call,
    request: httpx.Request,
    response: httpx.Response,
    head: Head,
    tracker: StreamTracker,
    *,
    exchange: Exchange,
) -> httpx.Response:
    """The SSE answer handed on, its body passed through ``tracker``; ``exchange`` runs the
    re-issue when the call asks for one."""
    body = _Body(response, head)
    stream = _TrackedStream(exchange, call, request, body, tracker)
    # From the head read already: a lookup in response.headers would make httpx work out
    # the headers' encoding first, a cost on every SSE answer.
    if not body.raw or head.sized:
        # Decoded, or of a length the events handed on may not keep (an id restored,
        # a duplicate dropped): a response of ours, without the length.
        return _rebuilt(call, request, response, stream=stream)
    response.stream = stream  # the server's response, handed on with its body tracked
    response.extensions[RECORD_EXTENSION] = call.ref
    return response


class _Body:
    """The bytes of one SSE answer as its reader would see them, and their closing.

    Read from the raw stream when nothing needs decoding (the response itself can then be
    handed on, head and all); else from the response's decoded bytes. Closed once.
    """

    def __init__(self, response: httpx.Response, head: Head) -> None:
        self._raw = _raw_stream(response, head)
        # The response only when it is read through: one handed on holds this body in its
        # stream, and a body holding it back would be a cycle left to the garbage collector.
        self._response = response if self._raw is None else None
        self._closed = False
        self._iterator: AsyncIterator[bytes] | None = None  # what the reader iterates

    @property
    def raw(self) -> bool:
        return self._raw is not None

    def __aiter__(self) -> AsyncIterator[bytes]:
        if self._raw is not None:
            self._iterator = self._raw.__aiter__()
        else:
            assert self._response is not None
            self._iterator = self._response.aiter_bytes()
        return self._iterator

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if isinstance(self._iterator, AsyncGenerator):  # now, not later in a task of the loop's
            await self._iterator.aclose()
        if self._raw is not None:
            await self._raw.aclose()  # the connection goes back to the pool
        elif self._response is not None:
            await self._response.aclose()


class _TrackedStream(httpx.AsyncByteStream):
    """An SSE body handed on as its tracker passes it; when it ends, the call says what
    follows: its end, a contained failure, an error, or a re-issue spliced into it."""

    def __init__(
        self,
        exchange: Exchange,
        call: Call,
        request: httpx.Request,
        body: _Body,
        tracker: StreamTracker,
    ) -> None:
        self._exchange = exchange
        self._call = call
        self._request = request
        self._body = body
        self._tracker = tracker

    async def __aiter__(self) -> AsyncIterator[bytes]:
        call = self._call
        while True:
            error: httpx.TransportError | None = None
            try:
                async for chunk in self._body:
                    out = self._tracker.feed(chunk)
                    if out:
                        yield out
                out = self._tracker.finish()
                if out:
                    yield out
            except httpx.TransportError as exc:
                error = exc
            await self._body.aclose()
            if error is None:
                command = call.stream_ended(self._tracker)
            else:
                command = call.stream_ended(self._tracker, error, *describe_error(error))
            publish(call.owed())
            response = head = None
            if isinstance(command, Sleep | Send | Ask):  # re-issued: run it again
                try:
                    command, response, head, _ = await self._exchange(call, self._request, command)
                except BaseException as exc:
                    call.abandoned(exc)
                    raise
                finally:
                    publish(call.owed())
            if type(command) is Stream:
                assert response is not None
                assert head is not None
                self._body = _Body(response, head)
                self._tracker = command.tracker
                continue
            if response is not None:
                await response.aclose()  # a whole answer, read already
            if type(command) is EndStream:
                if command.last:
                    yield command.last
                return
            raise failure(call, self._request, command)

    async def aclose(self) -> None:
        await self._body.aclose()
        self._call.stream_closed(self._tracker)
        publish(self._call.owed())


def _raw_stream(response: httpx.Response, head: Head) -> httpx.AsyncByteStream | None:
    """The response's unread body as sent, when that is how its reader would see it (no
    Content-Encoding to undo); else None, and the body is read through the response."""
    stream = response.stream
    if head.encoded or response.is_stream_consumed or not isinstance(stream, httpx.AsyncByteStream):
        return None
    return stream


async def read_whole(response: httpx.Response, head: Head, limit: int) -> tuple[bytes, bool]:
    """Read a whole answer, refusing one past ``limit`` bytes.

    Returns:
        The body, and whether the response itself can be handed on. A plain body is read
        from the raw stream and put back as a fresh stream, so the caller's client reads
        (and times: ``response.elapsed``) the response as it would without us. A
        content-encoded body is read decoded, as the caller would see it, to be handed on
        in a response of ours.
    """
    if response.is_stream_consumed:  # read already (a mock's answer): hand it on as is
        body = await response.aread()
        if len(body) > limit:
            raise _too_large(limit)
        return body, True
    raw = _raw_stream(response, head)
    chunks = []
    size = 0
    try:
        # Counted here rather than through a capping generator: one less async generator
        # per call on the path every JSON answer takes.
        async for chunk in response.aiter_bytes() if raw is None else raw:
            size += len(chunk)
            if size > limit:  # a hostile endless body
                raise _too_large(limit)
            chunks.append(chunk)
    finally:
        if raw is not None:
            await raw.aclose()  # the connection goes back to the pool
    body = b"".join(chunks)
    if raw is None:
        return body, False
    response.stream = httpx.ByteStream(body)
    return body, True


def _too_large(limit: int) -> BodyTooLarge:
    return BodyTooLarge(f"response body larger than {limit} bytes")


def answered(
    call: Call, request: httpx.Request, response: httpx.Response, body: bytes | None
) -> httpx.Response:
    """The server's answer, read whole (and decoded), with the call's record attached.

    ``body`` None: the response had no Content-Encoding and was read in place; it is handed
    on itself, head and all, as the server sent it.
    """
    if body is None:
        response.extensions[RECORD_EXTENSION] = call.ref
        return response
    return _rebuilt(call, request, response, content=body)


def _rebuilt(
    call: Call,
    request: httpx.Request,
    response: httpx.Response,
    *,
    content: bytes | None = None,
    stream: httpx.AsyncByteStream | None = None,
) -> httpx.Response:
    """The server's response with a body of ours (decoded, or tracked) and the record."""
    return httpx.Response(
        response.status_code,
        headers=strip_headers(response.headers.raw, *_ENCODING_HEADERS),
        content=content,
        stream=stream,
        request=request,
        extensions={**response.extensions, RECORD_EXTENSION: call.ref},
    )


def head_of(response: httpx.Response) -> Head:
    """The parts of a response head the call reads."""
    headers = header_values(response.headers, RESPONSE_HEADERS)
    return Head(
        response.status_code,
        headers.get("content-type"),
        headers.get("retry-after"),
        headers.get("mcp-session-id"),
        "content-encoding" in headers,
        "content-length" in headers,
    )


def with_body(request: httpx.Request, content: bytes, edits: HeaderEdits = ()) -> httpx.Request:
    """The request with another body (a re-sent or hedged copy under an id of its own), and
    its headers changed as ``edits`` say."""
    return httpx.Request(
        request.method,
        request.url,
        headers=edited(request.headers.raw, edits),
        content=content,
        extensions=request.extensions,
    )


def edited(raw: list[tuple[bytes, bytes]], edits: HeaderEdits) -> list[tuple[bytes, bytes]]:
    """Header pairs for another body (its length is its own), changed as ``edits`` say."""
    names = [name.encode() for name, _ in edits]
    headers = strip_headers(raw, b"content-length", b"transfer-encoding", *names)
    headers += [(name.encode(), value.encode()) for name, value in edits if value is not None]
    return headers
