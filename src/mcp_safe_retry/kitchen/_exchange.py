"""One POST being answered by the fault layer (``Exchange``: its facts, its ASGI channels and
its record in the book), and the ASGI helpers the layer answers with: reading and replaying
a request body, sending a whole response with an exact ``Content-Length``, waiting for a
client that may leave."""

from __future__ import annotations

import json
from typing import Any

import anyio
from starlette.types import Message, Receive, Scope, Send

from mcp_safe_retry.kitchen._abort import ABORT_EXTENSION, AbortFn
from mcp_safe_retry.kitchen._actions import Reply
from mcp_safe_retry.kitchen._book import KitchenBook
from mcp_safe_retry.kitchen._facts import RequestFacts
from mcp_safe_retry.kitchen._runs import Run
from mcp_safe_retry.kitchen._wire import JSON_CONTENT_TYPE, WireResponse

__all__ = [
    "MAX_BODY_BYTES",
    "Exchange",
    "client_left",
    "read_body",
    "replay",
    "send_json",
    "send_response",
    "wire",
    "with_length",
]

MAX_BODY_BYTES = 4 * 1024 * 1024


async def read_body(receive: Receive) -> bytes:
    """Read a whole request body (bounded by MAX_BODY_BYTES)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise ValueError("request body too large")
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def replay(body: bytes, receive: Receive) -> Receive:
    """Return a `receive` that yields the already-read body, then the real channel."""
    pending = True

    async def replayed() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def with_length(response: WireResponse) -> list[tuple[bytes, bytes]]:
    """Return the response's headers with a Content-Length matching its whole body."""
    headers = [(k, v) for k, v in response.headers if k.lower() != b"content-length"]
    headers.append((b"content-length", str(len(response.body)).encode()))
    return headers


async def send_response(send: Send, response: WireResponse) -> None:
    """Send a complete response with an exact Content-Length."""
    headers = with_length(response)
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": response.body, "more_body": False})


async def send_json(send: Send, status: int, payload: Any) -> None:
    """Send a JSON document (control endpoints and layer-level refusals)."""
    body = json.dumps(payload).encode()
    await send_response(send, WireResponse(status, ((b"content-type", JSON_CONTENT_TYPE),), body))


class Exchange:
    """One POST being answered: its facts, its ASGI channels and its record.

    The record is written as the status line goes out (or just before the connection
    drops), not after the app returns: a client holding its answer then finds this
    POST in the state it reads next.
    """

    def __init__(
        self,
        book: KitchenBook,
        run: Run,
        facts: RequestFacts,
        *,
        fault: str | None,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        self.book = book
        self.seq = book.next_seq()
        self.run = run
        self.facts = facts
        self.fault = fault
        self.scope = scope
        self.receive = receive
        self._send = send
        self._written = False

    async def send(self, message: Message) -> None:
        """Forward an ASGI message, recording the POST with the status it starts."""
        if message["type"] == "http.response.start":
            self.write(message["status"])
        await self._send(message)

    async def drop(self, reset: bool) -> None:
        """Drop the connection (RST when `reset`), recording the POST first."""
        self.write(None)
        await _abort_fn(self.scope)(reset)

    def write(self, status: int | None) -> None:
        """Write the record once; `status` None means no status line reached the client."""
        if self._written:
            return
        self._written = True
        facts = self.facts
        self.book.record_post(
            seq=self.seq,
            run=self.run.key,
            scenario=self.run.scenario_name,
            method=facts.method,
            request_id=facts.request_id,
            tool=facts.tool,
            status=status,
            fault=self.fault,
            session_id=facts.session_id,
            protocol_version=facts.protocol_version,
            key=facts.key,
            cancelled_id=facts.cancelled_id,
        )


async def client_left(ex: Exchange, delay_s: float) -> bool:
    """Wait `delay_s`; return early with True if the client disconnects meanwhile.

    The body was read already: its replayed message is taken first and handed back after
    the wait, so the real app still reads the body, then the live channel.
    """
    first = await ex.receive()
    with anyio.move_on_after(delay_s):
        while (await ex.receive())["type"] != "http.disconnect":
            pass
        return True
    ex.receive = replay(first.get("body", b""), ex.receive)
    return False


def wire(reply: Reply) -> WireResponse:
    headers = tuple((k.encode(), v.encode()) for k, v in reply.headers)
    return WireResponse(reply.status, headers, reply.body)


def _abort_fn(scope: Scope) -> AbortFn:
    abort: AbortFn | None = scope.get("extensions", {}).get(ABORT_EXTENSION)
    if abort is None:
        raise RuntimeError("dropping a connection needs the kitchen's uvicorn protocol")
    return abort
