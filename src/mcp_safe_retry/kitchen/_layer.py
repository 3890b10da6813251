"""The ASGI fault layer in front of the SDK's real Streamable HTTP app.

Every request to the MCP path is read, matched to its run, and either handed to the
real app or answered the way the run's scenario decides (one POST being answered, and
the ASGI helpers: `_exchange`). The layer also serves the kitchen's own control endpoints
under `/kitchen/`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_safe_retry.kitchen._actions import (
    Abort,
    Action,
    DropSession,
    Late,
    Mangle,
    Pass,
    Reply,
    Respond,
    Truncate,
)
from mcp_safe_retry.kitchen._book import KitchenBook
from mcp_safe_retry.kitchen._exchange import (
    Exchange,
    client_left,
    read_body,
    replay,
    send_json,
    send_response,
    wire,
    with_length,
)
from mcp_safe_retry.kitchen._facts import RequestFacts, read_facts
from mcp_safe_retry.kitchen._params import ScenarioError
from mcp_safe_retry.kitchen._runs import Runs, parse_query
from mcp_safe_retry.kitchen._scenario_base import jsonrpc_error, session_not_found
from mcp_safe_retry.kitchen._scenarios import SCENARIO_NAMES
from mcp_safe_retry.kitchen._tools import RUN_SCOPE_KEY
from mcp_safe_retry.kitchen._wire import (
    JSON_CONTENT_TYPE,
    SSE_HEADERS,
    WireResponse,
    frame,
    mangle,
    notification_events,
    session_headers,
)

CONTROL_PREFIX = "/kitchen/"


SSE_PATH = "/sse"
MESSAGES_PATH = "/messages"
_HTTP_SSE_PATHS = frozenset({SSE_PATH, MESSAGES_PATH})
_SESSION_ID = re.compile(rb"(session_id=[0-9A-Za-z_-]+)")


class EndpointWithRun:
    """ASGI app: the SDK's HTTP+SSE app, its `endpoint` event's URL carrying the query of
    the `GET /sse` that opened the stream (scenario, params, run), so that the POSTs the
    client sends there belong to that run as a `/mcp` URL's would."""

    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        query = scope.get("query_string", b"")
        if scope["type"] != "http" or scope["method"] != "GET" or not query:
            await self.inner(scope, receive, send)
            return
        pending = [True]

        async def sending(message: Message) -> None:
            body = message.get("body", b"")
            if pending[0] and message["type"] == "http.response.body" and b"endpoint" in body:
                pending[0] = False
                joined = _SESSION_ID.sub(lambda m: m.group(1) + b"&" + query, body, count=1)
                message = {**message, "body": joined}
            await send(message)

        await self.inner(scope, receive, sending)


class FaultLayer:
    """ASGI app: the kitchen's fault injection in front of the SDK's real app."""

    def __init__(
        self,
        inner: ASGIApp,
        book: KitchenBook,
        runs: Runs,
        *,
        json_response: bool,
        stateless: bool,
        legacy_only: bool = False,
        path: str = "/mcp",
        clock: Callable[[], float] = time.time,
        http_sse: ASGIApp | None = None,
    ) -> None:
        """Wrap `inner` (the SDK app); `json_response`/`stateless` must match its config.
        `http_sse`: the layer in front of the SDK's HTTP+SSE app, which serves `SSE_PATH`
        and `MESSAGES_PATH`."""
        self.inner = inner
        self.http_sse = http_sse
        self.book = book
        self.runs = runs
        self.json_response = json_response
        self.stateless = stateless
        self.legacy_only = legacy_only
        self.path = path
        self.clock = clock
        # Sessions being ended in the real server (session_dropped): a request carrying
        # one waits until the server has forgotten it, however fast the client is.
        self._ending: dict[str, anyio.Event] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Route one ASGI connection."""
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
        elif scope["path"].startswith(CONTROL_PREFIX):
            await self._control(scope, send)
        elif self.http_sse is not None and scope["path"].rstrip("/") in _HTTP_SSE_PATHS:
            await self.http_sse(scope, receive, send)
        elif scope["path"].rstrip("/") != self.path:
            await self.inner(scope, receive, send)
        else:
            await self._mcp(scope, receive, send)

    def reset(self) -> None:
        """Forget runs, counters and records."""
        self.runs.reset()
        self.book.reset()

    async def _control(self, scope: Scope, send: Send) -> None:
        route = (scope["method"], scope["path"].rstrip("/"))
        if route == ("GET", "/kitchen/state"):
            state = self.book.snapshot()
            run = parse_qs(scope["query_string"].decode("latin-1")).get("run")
            if run:
                state = state.for_run(run[0])
            await send_json(send, 200, state.to_json())
        elif route == ("POST", "/kitchen/reset"):
            self.reset()
            await send_json(send, 200, {"reset": True})
        elif route == ("GET", "/kitchen/scenarios"):
            await send_json(send, 200, {"scenarios": list(SCENARIO_NAMES)})
        else:
            await send_json(send, 404, {"error": "unknown kitchen endpoint"})

    async def _mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            run = self.runs.resolve(parse_query(scope["query_string"].decode("latin-1")))
        except ScenarioError as exc:
            await send_json(send, 400, {"error": str(exc)})
            return
        # The tools read the run from the scope to attribute their executions.
        scope = {**scope, RUN_SCOPE_KEY: run.key}
        if scope["method"] != "POST":
            facts = read_facts(scope["method"], scope["headers"], b"")
            await self._ended(facts.session_id)
            if facts.session_id is not None and facts.session_id in run.counters.expired:
                await send_response(send, wire(session_not_found(None)))
            else:
                await self.inner(scope, receive, send)
            return
        try:
            body = await read_body(receive)
        except ValueError:
            await send_json(send, 413, {"error": "request body too large"})
            return
        facts = read_facts("POST", scope["headers"], body)
        await self._ended(facts.session_id)
        run.counters.posts += 1
        action = run.scenario.decide(facts, run.counters, self.clock())
        exchange = Exchange(
            self.book,
            run,
            facts,
            fault=action.fault,
            scope=scope,
            receive=replay(body, receive),
            send=send,
        )
        try:
            await self._perform(action, exchange)
        finally:
            exchange.write(None)  # only if nothing was sent: the request was cut short

    async def _perform(self, action: Action, ex: Exchange) -> None:
        """Carry out `action` for one POST."""
        facts = ex.facts
        if isinstance(action, Pass):
            if action.delay_s:
                await anyio.sleep(action.delay_s)
            await self._pass(ex)
        elif isinstance(action, Late):
            if await client_left(ex, action.delay_s):
                ex.fault = f"{action.fault}:abandoned"
            else:
                await self._pass(ex)
        elif isinstance(action, Reply):
            await send_response(ex.send, wire(action))
        elif isinstance(action, Respond):
            sse = not self.json_response and not facts.is_modern
            await send_response(ex.send, frame(action.message, facts, sse=sse))
        elif isinstance(action, Mangle):
            captured = await self._capture(ex)
            await send_response(ex.send, mangle(action.kind, captured, facts))
        elif isinstance(action, Truncate):
            await self._truncate(action, ex)
        elif isinstance(action, DropSession):
            await self._drop_session(ex)
        else:
            await self._abort(action, ex)

    async def _ended(self, session_id: str | None) -> None:
        """Wait while the session is being ended in the real server."""
        ending = self._ending.get(session_id) if session_id is not None else None
        if ending is not None:
            await ending.wait()

    async def _drop_session(self, ex: Exchange) -> None:
        """Answer from the real server, then end the session there."""
        session_id = ex.facts.session_id
        assert session_id is not None  # the scenario drops only sessions
        ending = self._ending[session_id] = anyio.Event()  # before the answer goes out
        try:
            await self.inner(ex.scope, ex.receive, ex.send)
            await self._end_session(ex.scope)
        finally:
            ending.set()
            del self._ending[session_id]

    async def _end_session(self, scope: Scope) -> None:
        """End the request's session inside the real server: the DELETE a client would
        send, made in process, its answer discarded. The server forgets the session id,
        so it answers 404 to whatever carries it from now on."""
        kept = (b"host", b"mcp-session-id", b"mcp-protocol-version")
        headers = [(k, v) for k, v in scope["headers"] if k.lower() in kept]
        delete = {**scope, "method": "DELETE", "headers": headers}

        async def nothing() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(message: Message) -> None:
            return None

        await self.inner(delete, nothing, discard)

    async def _pass(self, ex: Exchange) -> None:
        """Hand the request to the real app (or refuse it as an mcp 1.x server would)."""
        if self.legacy_only and ex.facts.is_modern:
            ex.fault = "legacy_only"
            await send_response(ex.send, self._legacy_refusal(ex.facts))
        else:
            await self.inner(ex.scope, ex.receive, ex.send)

    async def _capture(self, ex: Exchange) -> WireResponse:
        """Run the real app to completion and keep its whole answer."""
        start: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def keep(message: Message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.inner(ex.scope, ex.receive, keep)
        headers = tuple((bytes(k), bytes(v)) for k, v in start.get("headers", ()))
        return WireResponse(int(start.get("status", 500)), headers, b"".join(chunks))

    async def _truncate(self, action: Truncate, ex: Exchange) -> None:
        if action.after_tool:
            await self._capture(ex)
        headers = list(SSE_HEADERS + session_headers(ex.facts))
        await ex.send({"type": "http.response.start", "status": 200, "headers": headers})
        for event in notification_events(ex.facts, action.events):
            await ex.send({"type": "http.response.body", "body": event, "more_body": True})
        if action.abrupt:
            await ex.drop(reset=False)
        else:
            await ex.send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _abort(self, action: Abort, ex: Exchange) -> None:
        captured = await self._capture(ex) if action.after_tool else None
        if action.mode != "partial":
            await ex.drop(reset=action.mode == "reset")
            return
        if captured is None:
            # Nothing ran: promise a plausible JSON answer and deliver half of it.
            result = {"content": [{"type": "text", "text": "never delivered"}], "isError": False}
            message = {"jsonrpc": "2.0", "id": ex.facts.request_id, "result": result}
            captured = frame(message, ex.facts, sse=False)
        # The promised length is the whole body: the client sees the cut for what it is.
        headers = with_length(captured)
        await ex.send(
            {"type": "http.response.start", "status": captured.status, "headers": headers}
        )
        half = captured.body[: len(captured.body) // 2]
        await ex.send({"type": "http.response.body", "body": half, "more_body": True})
        await ex.drop(reset=False)

    def _legacy_refusal(self, facts: RequestFacts) -> WireResponse:
        """Refuse a 2026-07-28 request exactly as an mcp 1.30 server does."""
        if self.stateless:
            message = (
                f"Bad Request: Unsupported protocol version: {facts.protocol_version}. "
                "Supported versions: 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25"
            )
        else:
            message = "Bad Request: Missing session ID"
        # mcp 1.x puts the literal id "server-error" on these refusals.
        body = json.dumps(jsonrpc_error("server-error", -32600, message)).encode()
        return WireResponse(400, ((b"content-type", JSON_CONTENT_TYPE),), body)
