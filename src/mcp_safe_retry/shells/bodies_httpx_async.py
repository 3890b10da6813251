"""The one executor of the async httpx shell, and the bodies it carries: one read whole,
an SSE one handed on as it flows, and the responses that hand them on. Carried out as the
call's commands say: nothing here decides. Hand-written: ``scripts/unasync.py`` makes its twins.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator

import anyio  # the session lock, and a shielded close
import attrs
import httpx

from ..core.call import Call
from ..core.commands import Answer, Ask, HeaderEdits, Lock, Next, Read, Send, Sleep, Stream, Unlock
from ..core.events import Head
from ..core.extensions import RECORD_EXTENSION
from ..core.gates import Gate
from ..core.stream import StreamTracker
from ..core.validators import callable_setting
from ..instrumentation.hooks import publish
from .errors_httpx import describe_error, failure, too_large
from .wiring import edited, head_of, strip_headers

__all__ = ["Ended", "Executor", "answered", "close", "made", "with_body"]

_ENCODING_HEADERS = (b"content-encoding", b"content-length", b"transfer-encoding")


# Where the executor stopped: the command (a race's: a ``Launch``, or None to wait), the
# response it concerns, its head, and the body read (None: read in place, or not read).
Ended = tuple[Next, httpx.Response | None, Head | None, bytes | None]

_WAITS = frozenset({Ask, Sleep, Lock, Unlock})  # what the executor carries out, save a Send
_ENDS = frozenset({Answer, Stream})  # how an exchange ends well: never carried out here


@attrs.define(eq=False)
class Executor:
    """The one loop that carries out commands, shared by the transport, its SSE answers and
    its races: it sends and reads, waits, asks the gate and takes the session lock. It
    decides nothing: it hands back the first command it does not carry out.

    Attributes:
        inner: the transport that really sends.
        sleep: what a backoff is waited with.
        session_lock: held by the call renewing an expired session (one transport's, and
            its twins' over other inner transports).
    """

    inner: httpx.AsyncBaseTransport
    sleep: Callable[[float], Awaitable[None]] = attrs.field(validator=callable_setting)
    session_lock: anyio.Lock = attrs.Factory(anyio.Lock)

    async def run(
        self,
        call: Call,
        request: httpx.Request,
        gate: Gate,
        command: Next,
        *,
        response: httpx.Response | None = None,
        head: Head | None = None,
        body: bytes | None = None,
        stop: tuple[type, ...] = (),
    ) -> Ended:
        """Carry out ``command`` (about ``response``, ``head``, ``body``, as in ``Ended``) and
        those that follow, until one it does not carry out or one of ``stop`` follows; ``gate``
        (the call, or a race's copy) hears what each met. Closes a response not handed back."""
        locked = False
        try:
            while True:  # by type, most frequent first: every call sends, most end then
                if type(command) is Send:
                    if response is not None:  # a retry: the answer it replaces is dropped
                        await response.aclose()
                        response = None
                    attempt = request
                    if command.content is not None:
                        attempt = with_body(request, command.content, command.headers)
                    try:
                        response = await self.inner.handle_async_request(attempt)
                    except httpx.TransportError as exc:
                        command = gate.failed(exc, *describe_error(exc))
                    else:
                        head = head_of(response)
                        command = gate.headed(head)
                        if type(command) is Read:  # the body of this response, read whole
                            try:
                                read, body = await read_whole(response, head, command.limit)
                            except (httpx.TransportError, httpx.DecodingError) as exc:
                                await response.aclose()
                                response = None
                                command = gate.failed(exc, *describe_error(exc))
                            else:
                                command = gate.received(read)
                    if type(command) in _ENDS:  # most calls end here: handed back at once
                        return command, response, head, body
                elif type(command) not in _WAITS:
                    return command, response, head, body
                elif type(command) is Ask:  # a budget's: its answer may yet be handed on
                    if response is not None and command.budget is None:
                        await response.aclose()  # the breaker's: dropped before the send
                        response = None
                    command = gate.answered(await command.allow_async())
                elif type(command) is Sleep:
                    await close(response)  # dropped before the wait, not after it
                    response = None
                    publish(call.owed())
                    await self.sleep(command.seconds)  # a cancellation here ends the call, unsent
                    command = gate.slept()
                elif type(command) is Lock:
                    publish(call.owed())  # the hooks hear of the 404 before the wait
                    await self.session_lock.acquire()
                    locked = True
                    command = call.locked()
                elif type(command) is Unlock:
                    self.session_lock.release()
                    locked = False
                    command = command.then
                if stop and type(command) in stop:
                    return command, response, head, body
        except BaseException:
            await close(response)
            raise
        finally:
            if locked:  # the call ended (an error, a cancellation) holding the lock
                self.session_lock.release()

    def streaming(
        self,
        call: Call,
        request: httpx.Request,
        response: httpx.Response,
        head: Head,
        tracker: StreamTracker,
    ) -> httpx.Response:
        """The SSE answer handed on (``Stream``), its body passed through ``tracker``; this
        executor runs the re-issue when the call asks for one."""
        stream = _TrackedStream(self, call, request, _Body(response, head, tracker))
        # Decoded, or of a length the events handed on may not keep (an id restored, a
        # duplicate dropped; from the head: response.headers would be decoded first): ours.
        if stream.body.raw is None or head.sized:
            return _rebuilt(call, request, response, stream=stream)
        response.stream = stream  # the server's response, handed on with its body tracked
        response.extensions[RECORD_EXTENSION] = call.ref
        return response


async def close(response: httpx.Response | None) -> None:
    """Close a response that is not handed on, shielded from a cancellation."""
    if response is not None:
        with anyio.CancelScope(shield=True):
            await response.aclose()


class _Body:
    """The bytes of one SSE answer as its reader would see them (the raw stream's when
    nothing needs decoding: the response itself can then be handed on, head and all; else
    the response's decoded bytes), the tracker they pass through, and their closing, once."""

    _response: httpx.Response | None = None  # the class's, unless read through the response
    _closed = False

    def __init__(self, response: httpx.Response, head: Head, tracker: StreamTracker) -> None:
        self.tracker = tracker
        self.raw = raw = _raw_stream(response, head)  # None: read through the response
        if raw is None:  # held only then: one handed on holds this body (a cycle for the gc)
            self._response = response
            self.chunks: AsyncIterator[bytes] = response.aiter_bytes()  # what the reader reads
        else:
            self.chunks = raw.__aiter__()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if isinstance(self.chunks, AsyncGenerator):  # now, not later in a task of the loop's
            await self.chunks.aclose()
        if self.raw is not None:
            await self.raw.aclose()  # the connection goes back to the pool
        elif self._response is not None:
            await self._response.aclose()


class _TrackedStream(httpx.AsyncByteStream):
    """An SSE body handed on as its tracker passes it; when it ends, the call says what
    follows: its end, a contained failure, an error, or a re-issue spliced into it. Its own
    iterator, not an async generator (the loop's hooks track each). The class holds the
    starting values: no pieces left to hand on, no error, the stream's end not handed on."""

    _pieces: Iterator[bytes] = iter(())
    _error: httpx.TransportError | None = None
    _over = False

    def __init__(self, executor: Executor, call: Call, request: httpx.Request, body: _Body) -> None:
        self._executor, self._call, self._request = executor, call, request
        self.body, self._tracker = body, body.tracker  # the body's, at hand for each chunk
        self._chunks: AsyncIterator[bytes] | None = body.chunks  # None: the body ended

    def __aiter__(self) -> _TrackedStream:
        return self

    async def __anext__(self) -> bytes:
        for piece in self._pieces:
            return piece
        while True:
            chunks = self._chunks
            while chunks is not None:
                try:
                    chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    chunks = self._chunks = None
                    pieces = self._tracker.finish_pieces()
                except httpx.TransportError as exc:
                    self._chunks, self._error = None, exc
                    break
                else:
                    pieces = self._tracker.pieces(chunk)  # a large event in its chunks
                if pieces:  # most often one
                    if len(pieces) > 1:
                        self._pieces = iter(pieces[1:])
                    return pieces[0]
            if self._over:  # else the body ended, all handed on: the call says what follows
                raise StopAsyncIteration
            self._over = True  # unless a re-issue's body follows
            call, error, request = self._call, self._error, self._request
            await self.body.aclose()
            broken = () if error is None else (error, *describe_error(error))
            then = call.stream_ended(self._tracker, *broken)
            publish(call.owed())
            try:  # a re-issue (a retry, a renewal) is carried out; its end handed back
                command, response, head, _ = await self._executor.run(call, request, call, then)
            except BaseException as exc:
                call.abandoned(exc)
                raise
            finally:
                publish(call.owed())
            if type(command) is Stream:  # the re-issue's body is read next
                assert response is not None
                assert head is not None
                self.body = body = _Body(response, head, command.tracker)
                self._tracker, self._error, self._over = body.tracker, None, False
                self._chunks = body.chunks
                continue
            await close(response)  # a whole answer, read already
            if type(command) is not Answer:
                raise failure(call, request, command)
            if command.body:  # its end: a contained failure, a spliced answer
                return command.body

    async def aclose(self) -> None:
        await self.body.aclose()
        self._call.stream_closed(self._tracker)
        publish(self._call.owed())


def _raw_stream(response: httpx.Response, head: Head) -> httpx.AsyncByteStream | None:
    """The response's unread body as sent, when that is how its reader would see it (no
    Content-Encoding to undo); else None, and the body is read through the response."""
    stream = response.stream
    if head.encoded or response.is_stream_consumed or not isinstance(stream, httpx.AsyncByteStream):
        return None
    return stream


async def read_whole(response: httpx.Response, head: Head, cap: int) -> tuple[bytes, bytes | None]:
    """Read a whole answer, refusing one past ``cap`` bytes (counted here, not by a capping
    generator: one less async generator per call on the path every JSON answer takes).

    Returns:
        The body, and None when the response itself is handed on (else the body again). A
        plain body is read from the raw stream and put back (``_Whole``), so the caller's
        client reads (and times: ``response.elapsed``) it as without us; a content-encoded
        one is read decoded (as the caller would see it) for a response of ours.
    """
    read = response.is_stream_consumed  # read already (a mock's answer): handed on as it is
    raw = _raw_stream(response, head)
    chunks, size = [], 0
    try:
        async for chunk in response.aiter_bytes() if raw is None else raw:
            size += len(chunk)
            if size > cap:  # a hostile endless body
                raise too_large(cap)
            chunks.append(chunk)
    finally:
        if raw is not None:
            await raw.aclose()  # the connection goes back to the pool
    body = b"".join(chunks)
    if raw is not None:
        response.stream = _Whole(body)
    elif not read:
        return body, body
    return body, None


class _Whole(httpx.AsyncByteStream):
    """A body read whole, handed on in one chunk: its own iterator, not a generator as
    ``ByteStream``'s (the event loop's hooks track every async generator, on every call)."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def __aiter__(self) -> _Whole:
        self._left: bytes | None = self._body  # what the iteration begun has to hand on
        return self

    async def __anext__(self) -> bytes:
        body = self._left
        if body is None:
            raise StopAsyncIteration
        self._left = None
        return body


def answered(
    call: Call, request: httpx.Request, response: httpx.Response | None, body: bytes | None
) -> httpx.Response:
    """The server's answer, read whole, with the call's record attached: with ``body`` None
    the response itself, head and all (no Content-Encoding: read in place), else rebuilt
    around ``body`` (decoded)."""
    assert response is not None
    if body is None:
        response.extensions[RECORD_EXTENSION] = call.ref
        return response
    return _rebuilt(call, request, response, content=body)


def made(call: Call, request: httpx.Request, answer: Answer) -> httpx.Response:
    """An answer made here, not the server's response (a contained failure, or an answer
    the call kept)."""
    assert answer.status is not None  # else the server's response is the answer: ``answered``
    if answer.stream is not None:  # an HTTP+SSE POST's failure: on its event stream too
        answer.stream[0](answer.stream[1])
    return httpx.Response(
        answer.status,
        headers={} if answer.content_type is None else {"content-type": answer.content_type},
        content=answer.body,
        request=request,
        extensions={RECORD_EXTENSION: call.ref},
    )


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
