"""A real server on 127.0.0.1 for end-to-end tests, and what it saw.

``Served`` runs any ASGI app (an SDK server's app, of mcp 1.x or 2.x alike: nothing here
imports ``mcp``) under uvicorn in a thread, on a port of its own, and records every HTTP
request that reached it: method, path, the headers that matter to MCP and the JSON-RPC
method of a POSTed message. ``MemoryEventStore`` is the smallest event store that lets an
SDK server number its SSE events and replay them to a client resuming with Last-Event-ID.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import attrs
import uvicorn

LOOPBACK = "127.0.0.1"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


@attrs.frozen
class Seen:
    """One HTTP request the server received (``status``: what it answered)."""

    method: str
    path: str
    rpc: str | None  # the JSON-RPC method of a POSTed message
    session: str | None
    last_event_id: str | None
    status: int | None


def bind_loopback() -> socket.socket:
    """A TCP socket bound to a free port of 127.0.0.1, not yet listening (a connection to
    it is refused until ``listen()``)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((LOOPBACK, 0))
    return sock


class Served:
    """``app`` served by uvicorn on 127.0.0.1 in a thread; a context manager.

    Args:
        app: the ASGI app (its lifespan runs).
        sock: a bound socket to serve on (default: a new one on a free port).
        http: uvicorn's HTTP protocol (default: its own choice).
    """

    def __init__(self, app: App, sock: socket.socket | None = None, *, http: Any = "auto") -> None:
        self.seen: list[Seen] = []
        self._app = app
        self._sock = sock if sock is not None else bind_loopback()
        self.port: int = self._sock.getsockname()[1]
        config = uvicorn.Config(
            self._record,
            interface="asgi3",
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=2,
            http=http,  # the kitchen's AbortableH11Protocol drops connections on purpose
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._serve, name=f"served-{self.port}", daemon=True)

    def url(self, path: str = "/mcp/") -> str:
        return f"http://{LOOPBACK}:{self.port}{path}"

    def requests(self, rpc: str | None = None) -> list[Seen]:
        """What the server saw (of one JSON-RPC method, or all of it)."""
        return [s for s in self.seen if rpc is None or s.rpc == rpc]

    def _serve(self) -> None:
        try:
            self._server.run(sockets=[self._sock])
        finally:
            self._sock.close()

    def __enter__(self) -> Served:
        self._sock.listen(128)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        if self._thread.is_alive():
            self._server.force_exit = True
            self._thread.join(10)

    async def _record(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        body: list[bytes] = []
        status: list[int] = []

        async def receiving() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                body.append(message.get("body", b""))
            return message

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
                self.seen.append(_seen(scope, headers, b"".join(body), message["status"]))
            await send(message)

        await self._app(scope, receiving, sending)
        if not status:  # ended without an answer
            self.seen.append(_seen(scope, headers, b"".join(body), None))


def _seen(scope: Scope, headers: dict[str, str], body: bytes, status: int | None) -> Seen:
    rpc = None
    if scope["method"] == "POST" and body:
        try:
            message = json.loads(body)
        except ValueError:
            message = None
        if isinstance(message, dict) and isinstance(message.get("method"), str):
            rpc = message["method"]
    return Seen(
        scope["method"],
        scope["path"],
        rpc,
        headers.get("mcp-session-id"),
        headers.get("last-event-id"),
        status,
    )


def memory_event_store() -> Any:
    """An in-memory EventStore of the installed SDK (mcp 1.x or 2.x: the same interface)."""
    from mcp.server.streamable_http import EventMessage, EventStore

    class MemoryEventStore(EventStore):  # type: ignore[misc]
        """Numbers every event; replays a stream's events after a given one."""

        def __init__(self) -> None:
            self.events: list[tuple[str, str, Any]] = []

        async def store_event(self, stream_id: str, message: Any) -> str:
            event_id = str(len(self.events) + 1)
            self.events.append((stream_id, event_id, message))
            return event_id

        async def replay_events_after(self, last_event_id: str, send_callback: Any) -> str | None:
            streams = [s for s, e, _ in self.events if e == last_event_id]
            if not streams:
                return None
            for stream, event_id, message in list(self.events):
                if (
                    stream == streams[0]
                    and message is not None
                    and int(event_id) > int(last_event_id)
                ):
                    await send_callback(EventMessage(message, event_id))
            return streams[0]

    return MemoryEventStore()


# The kitchen's (mcp_safe_retry.kitchen.ABORT_EXTENSION), written out: this module is
# imported in mcp 1.x environments too, where the kitchen (mcp 2.x) cannot be.
ABORT_EXTENSION = "mcp_safe_retry.kitchen.abort"


class FaultyPosts:
    """ASGI middleware: answers the tools/call POSTs of the tools in ``faults`` with a bare
    status (an int) or drops their connection (``"drop"``: served with the kitchen's
    ``AbortableH11Protocol``), each once; the rest passes."""

    def __init__(self, app: App, faults: dict[str, Any]) -> None:
        self.app = app
        self.faults = dict(faults)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        sent = json.loads(body) if body else {}
        tool = (
            (sent.get("params") or {}).get("name") if sent.get("method") == "tools/call" else None
        )
        fault = self.faults.pop(tool, None) if tool else None
        if fault == "drop":
            await scope["extensions"][ABORT_EXTENSION](False)
            return
        if isinstance(fault, int):
            await send({"type": "http.response.start", "status": fault, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
