"""The async httpx shell: it sends, sleeps and streams what the call's commands say.

Every decision lives in ``core.call.Call``; this file only carries out the commands it
returns and feeds it what the network answered. It is the hand-written source of all four
shells: ``scripts/unasync.py`` generates the sync shell and the two httpx2 shells from it
(CI checks they are up to date), so the shells never drift apart.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import anyio
import httpx

from ..core.budget import Budget
from ..core.call import RECORD_EXTENSION, Call, Head
from ..core.commands import (
    Break,
    Command,
    Contain,
    EndStream,
    HandOn,
    Raise,
    Read,
    Send,
    Sleep,
    Stream,
)
from ..core.engine import Engine
from ..core.policy import RetryPolicy
from ..core.records import History
from ..core.sse import DEFAULT_MAX_EVENT_BYTES
from ..core.stream import StreamTracker
from ..instrumentation.hooks import Hook
from .errors_httpx import MCP_TIMEOUT, BodyTooLarge, describe_error
from .support import (
    REQUEST_HEADERS,
    RESPONSE_HEADERS,
    header_values,
    is_jsonrpc_post,
    strip_headers,
)

__all__ = ["AsyncRetryTransport", "mcp_client"]

_ENCODING_HEADERS = (b"content-encoding", b"content-length", b"transfer-encoding")
# What one exchange ends with: the command, the response it concerns and that response's
# head, and the body read (None: the response was read in place, or not read).
_Ended = tuple[Command, httpx.Response | None, Head | None, bytes | None]


class AsyncRetryTransport(httpx.AsyncBaseTransport):
    """Classify every JSON-RPC exchange and re-send only what is safe to re-send.

    Args:
        transport: the transport that really sends (default: a new AsyncHTTPTransport).
        policy: the RetryPolicy (default: RetryPolicy()).
        history: where finished call records go (default: a new History).
        sleep: awaited with the seconds to wait before a retry (default: anyio.sleep).
        clock: monotonic seconds, for elapsed times and the deadline.
        hooks: observers told about every attempt and every finished call.
        scenario: a label copied into every record.
        max_event_bytes: the largest SSE event (or JSON body) that is parsed.
        budget: the retry budget (default: a RetryBudget of this transport's own; pass one
            budget to several transports to share it).
        contain_failures: answer a final network error or broken stream with a JSON-RPC
            error (code -32090) for the request's id instead of raising.

    Attributes:
        engine: the per-transport state its calls share (policy, history, budget, hooks).
        sleep: what the backoff is waited with (the ``sleep`` argument).
    """

    def __init__(
        self,
        transport: httpx.AsyncBaseTransport | None = None,
        *,
        policy: RetryPolicy | None = None,
        history: History | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        clock: Callable[[], float] | None = None,
        hooks: Sequence[Hook] = (),
        scenario: str | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        budget: Budget | None = None,
        contain_failures: bool = False,
    ) -> None:
        self._inner = transport if transport is not None else httpx.AsyncHTTPTransport()
        self.sleep = sleep if sleep is not None else anyio.sleep
        self.engine = Engine(
            policy=policy,
            history=history,
            hooks=hooks,
            clock=clock,
            scenario=scenario,
            max_event_bytes=max_event_bytes,
            budget=budget,
            contain_failures=contain_failures,
        )

    @property
    def history(self) -> History:
        return self.engine.history

    @property
    def policy(self) -> RetryPolicy:
        return self.engine.policy

    @property
    def budget(self) -> Budget:
        return self.engine.budget

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        headers = header_values(request.headers.raw, REQUEST_HEADERS)
        call = None
        if is_jsonrpc_post(request.method, headers.get("content-type")):
            call = self.engine.begin(await request.aread(), headers, request.extensions)
        elif request.method == "GET":
            call = self.engine.resumed(headers.get("last-event-id"))
        if call is None:
            return await self._inner.handle_async_request(request)
        try:
            command, response, head, body = await self._run(call, request, call.start())
        except BaseException as exc:
            call.abandoned(exc)  # cancelled, or an error of the inner transport's own
            raise
        finally:
            call.publish()
        if type(command) is HandOn:
            assert response is not None
            replacement = command.body
            return _answered(call, request, response, body if replacement is None else replacement)
        if type(command) is Stream:
            assert response is not None
            assert head is not None
            return self._streaming(call, request, response, head, command.tracker)
        if type(command) is Contain:
            return _json_response(request, command.body, call)
        if type(command) is Raise:
            raise command.error
        raise AssertionError(f"no answer: {command!r}")

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def _run(self, call: Call, request: httpx.Request, command: Command) -> _Ended:
        """Carry out the call's commands until one hands an answer on or ends the call."""
        response = head = body = None
        while True:  # by type, most frequent first: this runs for every call
            if type(command) is Send:
                if response is not None:  # a retry: the answer it replaces is dropped
                    await response.aclose()
                content = command.content
                attempt = request if content is None else _with_body(request, content)
                try:
                    response = await self._inner.handle_async_request(attempt)
                except httpx.TransportError as exc:
                    response = None
                    command = call.failed(exc, *describe_error(exc))
                    continue
                head = _head(response)
                command = call.headed(head)
                if type(command) is Read:  # the body of this response, read whole
                    try:
                        read, in_place = await _read(response, head, command.limit)
                    except (httpx.TransportError, httpx.DecodingError) as exc:
                        await response.aclose()
                        response = None
                        command = call.failed(exc, *describe_error(exc))
                        continue
                    body = None if in_place else read
                    command = call.received(read)
            elif type(command) is Sleep:
                if response is not None:  # dropped before the wait, not after it
                    await response.aclose()
                    response = None
                call.publish()
                await self.sleep(command.seconds)  # a cancellation here ends the call, unsent
                command = call.slept()
            else:
                return command, response, head, body

    def _streaming(
        self,
        call: Call,
        request: httpx.Request,
        response: httpx.Response,
        head: Head,
        tracker: StreamTracker,
    ) -> httpx.Response:
        body = _Body(response, head)
        stream = _TrackedStream(self, call, request, body, tracker)
        if not body.raw or "content-length" in response.headers:
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
        self._response = response
        self._raw = _raw_stream(response, head)
        self._closed = False

    @property
    def raw(self) -> bool:
        return self._raw is not None

    def __aiter__(self) -> AsyncIterator[bytes]:
        if self._raw is not None:
            return self._raw.__aiter__()
        return self._response.aiter_bytes()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._raw is not None:
            await self._raw.aclose()  # the connection goes back to the pool
        else:
            await self._response.aclose()


class _TrackedStream(httpx.AsyncByteStream):
    """An SSE body handed on as its tracker passes it; when it ends, the call says what
    follows: its end, a contained failure, an error, or a re-issue spliced into it."""

    def __init__(
        self,
        transport: AsyncRetryTransport,
        call: Call,
        request: httpx.Request,
        body: _Body,
        tracker: StreamTracker,
    ) -> None:
        self._transport = transport
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
            call.publish()
            response = head = None
            if isinstance(command, Sleep | Send):  # re-issued: run the exchange again
                try:
                    command, response, head, _ = await self._transport._run(
                        call, self._request, command
                    )
                except BaseException as exc:
                    call.abandoned(exc)
                    raise
                finally:
                    call.publish()
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
            if type(command) is Break:
                raise call.annotated(httpx.RemoteProtocolError(command.message))
            if type(command) is Raise:
                raise command.error
            raise AssertionError(f"no end for the stream: {command!r}")

    async def aclose(self) -> None:
        await self._body.aclose()
        self._call.stream_closed(self._tracker)
        self._call.publish()


def _raw_stream(response: httpx.Response, head: Head) -> httpx.AsyncByteStream | None:
    """The response's unread body as sent, when that is how its reader would see it (no
    Content-Encoding to undo); else None, and the body is read through the response."""
    stream = response.stream
    if head.encoded or response.is_stream_consumed or not isinstance(stream, httpx.AsyncByteStream):
        return None
    return stream


def _head(response: httpx.Response) -> Head:
    headers = header_values(response.headers.raw, RESPONSE_HEADERS)
    return Head(
        response.status_code,
        headers.get("content-type"),
        headers.get("retry-after"),
        headers.get("mcp-session-id"),
        "content-encoding" in headers,
    )


async def _read(response: httpx.Response, head: Head, limit: int) -> tuple[bytes, bool]:
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
            raise BodyTooLarge(f"response body larger than {limit} bytes")
        return body, True
    raw = _raw_stream(response, head)
    chunks = []
    try:
        async for chunk in _capped(response.aiter_bytes() if raw is None else raw, limit):
            chunks.append(chunk)
    finally:
        if raw is not None:
            await raw.aclose()  # the connection goes back to the pool
    body = b"".join(chunks)
    if raw is None:
        return body, False
    response.stream = httpx.ByteStream(body)
    return body, True


async def _capped(chunks: AsyncIterable[bytes], limit: int) -> AsyncIterator[bytes]:
    """Pass chunks on, refusing to go past ``limit`` bytes (a hostile endless body)."""
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"response body larger than {limit} bytes")
        yield chunk


def _answered(
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


def _json_response(request: httpx.Request, content: bytes, call: Call) -> httpx.Response:
    """A JSON answer made here, not by the server (a contained failure)."""
    return httpx.Response(
        200,
        headers={"content-type": "application/json"},
        content=content,
        request=request,
        extensions={RECORD_EXTENSION: call.ref},
    )


def _with_body(request: httpx.Request, content: bytes) -> httpx.Request:
    return httpx.Request(
        request.method,
        request.url,
        headers=strip_headers(request.headers.raw, b"content-length", b"transfer-encoding"),
        content=content,
        extensions=request.extensions,
    )


def mcp_client(
    *,
    policy: RetryPolicy | None = None,
    headers: dict[str, str] | None = None,
    auth: httpx.Auth | None = None,
    timeout: httpx.Timeout | float | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    contain_failures: bool = True,
    **options: Any,
) -> httpx.AsyncClient:
    """A client for the MCP SDK's Streamable HTTP transport, with retries underneath.

    It has the SDK's usual settings (30 s timeouts, 300 s to read a stream, redirects
    followed) and contains final network failures as JSON-RPC errors, so one lost
    connection fails one call instead of tearing the session down.

    Args:
        policy: the RetryPolicy.
        headers: headers sent with every request.
        auth: an httpx Auth.
        timeout: replaces the default timeouts.
        transport: the inner transport (default: a new one).
        contain_failures: see AsyncRetryTransport.
        options: more AsyncRetryTransport options (history, hooks, budget, scenario, ...).
    """
    retry = AsyncRetryTransport(
        transport, policy=policy, contain_failures=contain_failures, **options
    )
    return httpx.AsyncClient(
        transport=retry,
        headers=headers,
        auth=auth,
        timeout=MCP_TIMEOUT if timeout is None else timeout,
        follow_redirects=True,
    )
