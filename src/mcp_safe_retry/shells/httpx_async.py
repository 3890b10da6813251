"""The async httpx shell: it sends, sleeps and streams; the engine decides everything else.

This file is the hand-written source of all four shells. ``scripts/unasync.py`` generates
the sync shell and the two httpx2 shells from it (CI checks they are up to date), so the
shells never drift apart.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import anyio
import httpx

from ..core.budget import Budget
from ..core.engine import RECORD_EXTENSION, Call, Engine, Head
from ..core.policy import RETRY_AFTER_STATUSES, RetryPolicy
from ..core.records import History
from ..core.sse import DEFAULT_MAX_EVENT_BYTES
from ..core.stream import StreamTracker
from ..instrumentation.hooks import Hook
from .support import (
    REQUEST_HEADERS,
    RESPONSE_HEADERS,
    EntryGuard,
    check_inner,
    describe_error,
    header_values,
    is_jsonrpc_post,
    split_options,
    strip_headers,
    wrong_client,
)

__all__ = ["AsyncRetryTransport", "BodyTooLarge", "mcp_client"]

_ENCODING_HEADERS = (b"content-encoding", b"content-length", b"transfer-encoding")
MCP_TIMEOUT = httpx.Timeout(30.0, read=300.0)  # the MCP SDKs' defaults: a stream may idle


class BodyTooLarge(httpx.ReadError):
    """A JSON body larger than the transport's ``max_event_bytes``: not read, not retried."""


class AsyncRetryTransport(httpx.AsyncBaseTransport, EntryGuard):
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
            error (code -32010) for the request's id instead of raising.
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
        check_inner(transport, self)  # the wrong library or mode fails here, by name
        self._inner = transport if transport is not None else httpx.AsyncHTTPTransport()
        self._sleep = sleep if sleep is not None else anyio.sleep
        self._engine = Engine(
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
        return self._engine.history

    @property
    def policy(self) -> RetryPolicy:
        return self._engine.policy

    @property
    def budget(self) -> Budget:
        return self._engine.budget

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if not isinstance(request, httpx.Request):  # a client of the other library
            raise wrong_client(self, request)
        headers = header_values(request.headers.raw, REQUEST_HEADERS)
        if not is_jsonrpc_post(request.method, headers.get("content-type")):
            resumed = None
            if request.method == "GET":
                resumed = self._engine.resumed(headers.get("last-event-id"))
            if resumed is None:
                return await self._inner.handle_async_request(request)
            return await self._resume(resumed, request)
        body = await request.aread()
        call = self._engine.begin(body, headers, request.extensions)
        if call is None:
            return await self._inner.handle_async_request(request)
        try:
            response, head, answer = await self._exchange(call, request)
        except httpx.TransportError:
            contained = call.contained()
            if contained is None:
                raise
            return _json_response(request, contained, call)
        except BaseException as exc:
            call.abandoned(exc)  # cancelled, or an error of the inner transport's own
            raise
        if head is not None:
            return self._streaming(call, request, response, head)
        return _answered(call, request, response, answer)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def _resume(self, call: Call, request: httpx.Request) -> httpx.Response:
        """Pass the client's Last-Event-ID GET through, following it as part of ``call``."""
        try:
            response = await self._inner.handle_async_request(request)
        except httpx.TransportError as exc:
            call.failed(*describe_error(exc))
            call.annotate(exc)
            raise
        except BaseException as exc:
            call.abandoned(exc)
            raise
        head = _head(response)
        if call.wants_stream(head):
            return self._streaming(call, request, response, head)
        try:
            body, in_place = await self._read(response, head)
        except (httpx.TransportError, httpx.DecodingError) as exc:
            await response.aclose()
            call.failed(*describe_error(exc))
            call.annotate(exc)
            raise
        call.received(head, body)
        return _answered(call, request, response, None if in_place else body)

    async def _exchange(
        self, call: Call, request: httpx.Request
    ) -> tuple[httpx.Response, Head | None, bytes | None]:
        """Send until the engine stops; return the answer to hand on.

        Returns:
            The response; its head if it is an SSE stream still to be read (else None); and
            the body to hand on (read whole, with the caller's id restored) if it is not,
            or None when the response was read in place and can be handed on as it is.
        """
        while True:
            if call.delay > 0:
                await self._sleep(call.delay)  # a cancellation here ends the call, unsent
            content = call.next_send()
            attempt = request if content is None else _with_body(request, content)
            try:
                response = await self._inner.handle_async_request(attempt)
            except httpx.TransportError as exc:
                if call.failed(*describe_error(exc)):
                    continue
                call.annotate(exc)
                raise
            head = _head(response)
            if call.wants_stream(head):
                return response, head, b""
            try:
                body, in_place = await self._read(response, head)
            except (httpx.TransportError, httpx.DecodingError) as exc:
                await response.aclose()
                if call.failed(*describe_error(exc)):
                    continue
                call.annotate(exc)
                raise
            retry, replacement = call.received(head, body)
            if not retry:
                if replacement is None:
                    return response, None, None if in_place else body
                return response, None, replacement
            await response.aclose()

    async def _read(self, response: httpx.Response, head: Head) -> tuple[bytes, bool]:
        """Read a whole answer, refusing one past ``max_event_bytes``.

        Returns:
            The body, and whether the response itself can be handed on. A plain body is
            read from the raw stream and put back as a fresh stream, so the caller's client
            reads (and times: ``response.elapsed``) the response as it would without us. A
            content-encoded body is read decoded, as the caller would see it, to be handed
            on in a response of ours.
        """
        limit = self._engine.max_event_bytes
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

    def _streaming(
        self, call: Call, request: httpx.Request, response: httpx.Response, head: Head
    ) -> httpx.Response:
        body = _Body(response, head)
        stream = _TrackedStream(self, call, request, body, call.stream(head))
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
    """An SSE body handed on event by event; a READ call whose stream breaks is re-issued
    and the new answer spliced in, so the caller reads one stream with one response."""

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
            problem = describe_error(error) if error is not None else None
            if not call.stream_ended(self._tracker, problem):
                if not self._tracker.done:
                    contained = call.contained(in_stream=True)
                    if contained is not None:
                        yield contained
                    elif error is not None:
                        call.annotate(error)
                        raise error
                return
            try:
                response, head, _ = await self._transport._exchange(call, self._request)
            except httpx.TransportError:
                contained = call.contained(in_stream=True)
                if contained is None:
                    raise
                yield contained
                return
            except BaseException as exc:
                call.abandoned(exc)
                raise
            if head is not None:
                self._body = _Body(response, head)
                self._tracker = call.stream(head)
                continue
            await response.aclose()  # a whole answer, read already
            event = call.splice_event() or call.contained(in_stream=True)
            if event is None:
                status = response.status_code
                broken = httpx.RemoteProtocolError(
                    f"SSE stream broke; its re-issued request got no response (HTTP {status})"
                )
                call.annotate(broken)
                raise broken
            yield event
            return

    async def aclose(self) -> None:
        await self._body.aclose()
        self._call.stream_closed(self._tracker)


def _raw_stream(response: httpx.Response, head: Head) -> httpx.AsyncByteStream | None:
    """The response's unread body as sent, when that is how its reader would see it (no
    Content-Encoding to undo); else None, and the body is read through the response."""
    stream = response.stream
    if head.encoded or response.is_stream_consumed or not isinstance(stream, httpx.AsyncByteStream):
        return None
    return stream


def _head(response: httpx.Response) -> Head:
    headers = header_values(response.headers.raw, RESPONSE_HEADERS)
    status = response.status_code
    return Head(
        status,
        headers.get("content-type"),
        headers.get("retry-after") if status in RETRY_AFTER_STATUSES else None,
        headers.get("mcp-session-id"),
        "content-encoding" in headers,
    )


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
    connection fails one call instead of tearing the session down. It fits where a client
    factory is asked for (``httpx_client_factory=functools.partial(mcp_client, ...)``).

    Args:
        policy: the RetryPolicy.
        headers: headers sent with every request.
        auth: an httpx Auth.
        timeout: replaces the default timeouts.
        transport: the inner transport (default: a new one).
        contain_failures: see AsyncRetryTransport.
        options: AsyncClient options (follow_redirects, event_hooks, ...); connection
            options for the default inner transport (verify, limits, http2, proxy, ...);
            and more AsyncRetryTransport options (history, hooks, budget, scenario, ...).
    """
    client_options, pool_options, retry_options = split_options(
        options, httpx.AsyncClient, httpx.AsyncHTTPTransport
    )
    if pool_options:
        if transport is not None:
            raise TypeError(f"give {', '.join(pool_options)} to the inner transport you pass")
        transport = httpx.AsyncHTTPTransport(**pool_options)
    retry = AsyncRetryTransport(
        transport, policy=policy, contain_failures=contain_failures, **retry_options
    )
    client_options.setdefault("follow_redirects", True)
    return httpx.AsyncClient(
        transport=retry,
        headers=headers,
        auth=auth,
        timeout=MCP_TIMEOUT if timeout is None else timeout,
        **client_options,
    )
