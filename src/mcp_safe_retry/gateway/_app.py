"""The gateway's ASGI app: every request of a client forwarded to one upstream through the
retry transport, and the answer relayed back as it comes.

The gateway decides nothing about retries: each client POST goes through one
``AsyncRetryTransport`` (httpx) with ``contain_failures=True``, the transport an mcp 1.x
client gets from ``mcp_client``, so classification, the policy, the duplicate guard, the
budget, the breaker, session renewal, hedging and the records are the in-process ones. What
is here is the proxy's own work: the checks of what may come in, the headers that cross,
the body's bound, the relay of an answer chunk by chunk (an SSE answer event by event, as
the transport hands it on), a client's disconnection carried upstream as a cancellation,
and the upstream's pointers (a redirect, a legacy ``endpoint`` event) pointed back at the
gateway.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping, Sequence
from typing import Any

import anyio
import httpx

from ..core.breaker import Breaker
from ..core.budget import Budget
from ..core.call_ledger import Ledger
from ..core.extensions import CALLER_EXTENSION
from ..core.hooks import Hook
from ..core.policy import RetryPolicy
from ..core.records import History
from ..instrumentation.redact import short_text
from ..shells.httpx_async import AsyncRetryTransport
from ._paths import Paths
from ._rules import (
    Admission,
    Refused,
    caller_of,
    forwarded_request_headers,
    forwarded_response_headers,
)

__all__ = ["DEFAULT_MAX_BODY_BYTES", "HEALTH_PATH", "METRICS_PATH", "Gateway"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
"""The largest request body forwarded (a larger one is answered 413, unread)."""

HEALTH_PATH = "/healthz"
METRICS_PATH = "/metrics"
_METHODS = frozenset({"POST", "GET", "DELETE"})
_PING = b'{"jsonrpc":"2.0","id":"mcp-safe-retry-healthz","method":"ping"}'
_ACCEPT = "application/json, text/event-stream"
_SOURCE = "mcp-safe-retry gateway"

logger = logging.getLogger("mcp_safe_retry.gateway")


class Gateway:
    """An ASGI app forwarding Streamable HTTP (and legacy HTTP+SSE) MCP traffic to one
    upstream through the retry transport.

    Args:
        upstream: the upstream's MCP endpoint (``http://host:port/mcp``): every request
            goes to its origin, at the path the client asked for (the upstream's own path,
            or one the upstream pointed the client at), never anywhere else.
        policy: the retry transport's (see ``AsyncRetryTransport``).
        history: the retry transport's.
        hooks: the retry transport's.
        budget: the retry transport's.
        breaker: the retry transport's.
        ledger: the retry transport's (the process's own by default; a ``RedisCallLedger``
            shares it with the other gateways of a fleet).
        transport: the inner transport that really sends (default: a new
            ``httpx.AsyncHTTPTransport``, closed with the app).
        upstream_token: sent as ``Authorization: Bearer ...`` in place of the client's.
        client_tokens: when given, every request but ``/healthz`` must carry one of them in
            ``X-MCP-Gateway-Token`` (compared in constant time), or is answered 401.
        allowed_hosts: the ``Host`` values (``host:port`` or ``host``) a request may carry,
            else 421 (a DNS-rebinding page names its own host); None: any.
        allowed_origins: the ``Origin`` values a request may carry besides those of the
            allowed hosts (a browser page of another origin is answered 403).
        max_body_bytes: the largest request body forwarded.
        metrics: what ``GET /metrics`` answers (Prometheus text); None: no such path.
        read_timeout: seconds to wait for each read of a POST's answer (a GET's event
            stream is never timed out: it may stay quiet for long).
    """

    def __init__(
        self,
        upstream: str,
        *,
        policy: RetryPolicy | None = None,
        history: History | None = None,
        hooks: Sequence[Hook] = (),
        budget: Budget | None = None,
        breaker: Breaker | None = None,
        ledger: Ledger | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        upstream_token: str | None = None,
        client_tokens: Sequence[str] = (),
        allowed_hosts: Sequence[str] | None = None,
        allowed_origins: Sequence[str] = (),
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        metrics: Callable[[], bytes] | None = None,
        read_timeout: float = 300.0,
    ) -> None:
        url = httpx.URL(upstream)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"the upstream must be an http(s) URL, not {upstream!r}")
        if max_body_bytes <= 0:
            raise ValueError("max_body_bytes must be positive")
        self.upstream = str(url)
        self._base = str(url.copy_with(path="/", query=None, fragment=None)).rstrip("/")
        self._paths = Paths(self.upstream)
        self._upstream_query = url.query.decode("ascii")
        self._own_inner = transport is None
        self._inner = httpx.AsyncHTTPTransport() if transport is None else transport
        self.transport = AsyncRetryTransport(
            self._inner,
            policy=policy,
            history=history,
            hooks=hooks,
            budget=budget,
            breaker=breaker,
            ledger=ledger,
            contain_failures=True,
        )
        self._upstream_token = upstream_token
        self._admission = Admission(allowed_hosts, allowed_origins, client_tokens, HEALTH_PATH)
        self._max_body = max_body_bytes
        self._metrics = metrics
        self._timeouts: dict[str, float | None] = {
            "connect": 30.0, "read": read_timeout, "write": 30.0, "pool": 30.0
        }  # fmt: skip

    @property
    def history(self) -> History:
        """The records of the calls forwarded."""
        return self.transport.history

    @property
    def paths(self) -> tuple[str, ...]:
        """The paths forwarded: the upstream's own, then those it pointed clients at."""
        return self._paths.names()

    async def aclose(self) -> None:
        """Close the inner transport, if the gateway made it."""
        if self._own_inner:
            await self._inner.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)
        else:  # a websocket: not MCP
            await send({"type": "websocket.close", "code": 1008})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.monotonic()
        headers = _header_map(scope["headers"])
        status = [0]
        caller = caller_of(headers)  # a digest: the log may name it

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            self._admission.check(scope["path"], headers)
            await self._route(scope, headers, caller, receive, sending)
        except Refused as refusal:
            await _send_error(sending, refusal.status, str(refusal))
        finally:
            logger.info(
                "%s %s %s %.1f ms%s",
                scope["method"],
                _loggable(scope["path"]),
                status[0] or "-",
                (time.monotonic() - started) * 1000,
                "" if caller is None else f" client={caller[:12]}",
            )

    async def _route(
        self,
        scope: Scope,
        headers: dict[str, str],
        caller: str | None,
        receive: Receive,
        send: Send,
    ) -> None:
        path, method = scope["path"], scope["method"]
        if path == HEALTH_PATH and method == "GET":
            await self._health(send)
        elif path == METRICS_PATH and method == "GET" and self._metrics is not None:
            await _send(send, 200, "text/plain; version=0.0.4", self._metrics())
        elif path not in self._paths:
            served = self._paths.upstream
            raise Refused(404, f"{path!r} is not forwarded: this gateway serves {served!r} "
                          "and the paths its upstream names")  # fmt: skip
        elif method not in _METHODS:
            raise Refused(405, f"{method} is not an MCP request")
        else:
            body = await self._body(headers, receive)
            request = self._upstream_request(scope, caller, body)
            async with anyio.create_task_group() as group:
                # The client hanging up cancels the forwarding: the upstream's stream is
                # closed, which the 2026-07-28 revision reads as the request's cancellation.
                group.start_soon(_cancel_on_disconnect, receive, group.cancel_scope)
                try:
                    await self._relay(request, send)
                except Refused as refusal:  # answered here, not through the task group
                    await _send_error(send, refusal.status, str(refusal))
                group.cancel_scope.cancel()

    async def _body(self, headers: dict[str, str], receive: Receive) -> bytes:
        """The request's body, refused once it passes the bound (unread past it)."""
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._max_body:
            raise Refused(413, f"request bodies are limited to {self._max_body} bytes")
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise Refused(400, "the client went away while sending")
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > self._max_body:
                raise Refused(413, f"request bodies are limited to {self._max_body} bytes")
            parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts)

    def _upstream_request(self, scope: Scope, caller: str | None, body: bytes) -> httpx.Request:
        path: str = scope["path"]
        query = scope["query_string"].decode("latin-1")
        if path == self._paths.upstream and self._upstream_query:
            query = self._upstream_query + (f"&{query}" if query else "")
        raw_path = scope.get("raw_path") or path.encode()
        url = httpx.URL(self._base + raw_path.decode("latin-1") + (f"?{query}" if query else ""))
        timeouts = self._timeouts
        if scope["method"] == "GET":  # an event stream may stay quiet for long
            timeouts = {**timeouts, "read": None}
        extensions: dict[str, Any] = {"timeout": timeouts}
        if caller is not None:
            extensions[CALLER_EXTENSION] = caller
        return httpx.Request(
            scope["method"],
            url,
            headers=forwarded_request_headers(scope["headers"], self._upstream_token),
            content=body if body or scope["method"] == "POST" else None,
            extensions=extensions,
        )

    async def _relay(self, request: httpx.Request, send: Send) -> None:
        """Send ``request`` through the retry transport; relay its answer as it comes."""
        try:
            response = await self.transport.handle_async_request(request)
        except httpx.TransportError as exc:  # not contained: initialize, a GET, a DELETE
            detail = short_text(str(exc)) or ""
            raise Refused(502, f"the upstream failed: {type(exc).__name__}: {detail}") from None
        try:
            headers = forwarded_response_headers(response.headers.raw)
            location = response.headers.get("location")
            if location is not None:  # a redirect: pointed back at the gateway, or refused
                back = self._paths.location(str(request.url), location)
                if back is None:
                    raise Refused(502, "the upstream redirected to another origin: refused")
                headers = [(n, back.encode() if n == b"location" else v) for n, v in headers]
            await send(
                {"type": "http.response.start", "status": response.status_code, "headers": headers}
            )
            # A JSON answer the transport read whole (to classify it) is handed on read; no
            # Content-Encoding then, so its content is the bytes as they came.
            chunks = (
                _once(response.content) if response.is_stream_consumed else response.aiter_raw()
            )
            content_type = response.headers.get("content-type", "")
            if request.method == "GET" and content_type.startswith("text/event-stream"):
                chunks = self._paths.endpoint_pointed_back(chunks, str(request.url))
            try:
                async for chunk in chunks:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            except httpx.TransportError as exc:  # a stream the transport could not save
                logger.warning("the upstream's answer broke off: %s", type(exc).__name__)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()

    async def _health(self, send: Send) -> None:
        """Whether the upstream answers (any HTTP answer to a ``ping``), within 5 s."""
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
        if self._upstream_token is not None:
            headers["authorization"] = f"Bearer {self._upstream_token}"
        request = httpx.Request("POST", self.upstream, headers=headers, content=_PING)
        started = time.monotonic()
        try:
            with anyio.fail_after(5):
                response = await self._inner.handle_async_request(request)
                await response.aclose()
        except (httpx.HTTPError, TimeoutError) as exc:
            body = {"status": "unavailable", "upstream": {"error": type(exc).__name__}}
            await _send(send, 503, "application/json", json.dumps(body).encode())
            return
        answer = {
            "status": response.status_code,
            "ms": round((time.monotonic() - started) * 1000, 1),
        }
        body = {"status": "ok", "upstream": answer}
        await _send(send, 200, "application/json", json.dumps(body).encode())


def _header_map(raw: Sequence[tuple[bytes, bytes]]) -> dict[str, str]:
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in raw}


def _loggable(path: str) -> str:
    """A path for the log: never the query (it may hold a key), scrubbed (an absolute-form
    target may name a user and password), cut short."""
    return short_text(path, 200) or ""


async def _once(body: bytes) -> AsyncIterator[bytes]:
    yield body


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


async def _send(send: Send, status: int, content_type: str, body: bytes) -> None:
    headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _send_error(send: Send, status: int, message: str) -> None:
    """A refusal of the gateway's own, as a JSON-RPC error (id null) the SDKs read."""
    error = {"code": -32600 if status < 500 else -32603, "message": message,
             "data": {"source": _SOURCE, "status": status}}  # fmt: skip
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
    await _send(send, status, "application/json", body)
