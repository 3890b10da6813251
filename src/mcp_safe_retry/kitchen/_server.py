"""Serving the kitchen: the test handle (`KitchenServer`) and the blocking `run_kitchen`."""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

import attrs
import uvicorn
from mcp.server.transport_security import TransportSecuritySettings

from mcp_safe_retry.kitchen._abort import AbortableH11Protocol
from mcp_safe_retry.kitchen._book import KitchenBook, KitchenState
from mcp_safe_retry.kitchen._layer import MESSAGES_PATH, SSE_PATH, EndpointWithRun, FaultLayer
from mcp_safe_retry.kitchen._runs import Runs, parse_query, query_for
from mcp_safe_retry.kitchen._scenarios import parse_scenario
from mcp_safe_retry.kitchen._tools import build_mcp_server

LOOPBACK = "127.0.0.1"


@attrs.frozen
class KitchenConfig:
    """How a kitchen serves.

    Attributes:
        scenario: Default scenario, for requests whose URL names none.
        params: The default scenario's params.
        stateless: The SDK's `stateless_http` (no `Mcp-Session-Id` on 2025-11-25).
        json_response: The SDK's `json_response` (JSON instead of SSE answers).
        legacy_only: Refuse 2026-07-28 requests as an mcp 1.x server does, so a
            negotiating client falls back to the 2025-11-25 handshake.
        path: The MCP endpoint path.
        log_limit: POST records kept (the oldest are dropped first).
        graceful_shutdown_s: How long stopping waits for open connections.
    """

    scenario: str = "baseline"
    params: Mapping[str, Any] | None = None
    stateless: bool = False
    json_response: bool = False
    legacy_only: bool = False
    path: str = "/mcp"
    log_limit: int = 10_000
    graceful_shutdown_s: int = 2


def bind_loopback(port: int = 0) -> socket.socket:
    """Return a listening TCP socket on 127.0.0.1 (port 0 picks a free one)."""
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP,
    # and without it Nagle and delayed ACKs stall every answer on a kept-alive connection.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LOOPBACK, port))
        # Listening before uvicorn starts lets clients connect as soon as the URL is known.
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def build_kitchen_app(config: KitchenConfig, port: int, book: KitchenBook) -> FaultLayer:
    """Return the fault layer wrapped around a fresh SDK app for a server on `port`."""
    runs = Runs(config.scenario, config.params)
    # The SDK refuses a Host header it does not list with 421; list the bound port and
    # the bare names too, since a Host without a port is legal HTTP.
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{LOOPBACK}:{port}", f"localhost:{port}", LOOPBACK, "localhost"],
        allowed_origins=[f"http://{LOOPBACK}:{port}", f"http://localhost:{port}"],
    )
    server = build_mcp_server(book)
    inner = server.streamable_http_app(
        streamable_http_path=config.path,
        json_response=config.json_response,
        stateless_http=config.stateless,
        transport_security=security,
    )
    # The HTTP+SSE transport (2024-11-05) beside it: GET /sse, POST /messages/ (_layer.py).
    http_sse = FaultLayer(
        EndpointWithRun(server.sse_app(transport_security=security)),
        book,
        runs,
        json_response=True,  # a POST's own answer: its response goes on the event stream
        stateless=config.stateless,
        path=MESSAGES_PATH,
    )
    return FaultLayer(
        inner,
        book,
        runs,
        json_response=config.json_response,
        stateless=config.stateless,
        legacy_only=config.legacy_only,
        path=config.path,
        http_sse=http_sse,
    )


class _NotifyingServer(uvicorn.Server):
    """uvicorn's server, calling back once it accepts connections."""

    def __init__(self, config: uvicorn.Config, on_started: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_started = on_started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self._on_started()


def _uvicorn_config(app: FaultLayer, config: KitchenConfig, *, quiet: bool) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        http=AbortableH11Protocol,
        ws="none",
        lifespan="on",
        log_level="warning",
        # A handle inside a test process must not reconfigure that process's logging.
        log_config=None if quiet else uvicorn.config.LOGGING_CONFIG,
        access_log=False,
        timeout_graceful_shutdown=config.graceful_shutdown_s,
    )


class KitchenServer:
    """A kitchen on 127.0.0.1 in a background thread; a context manager.

    Example:
        with KitchenServer(scenario="rate_limit", params={"times": 1}) as kitchen:
            url = kitchen.url_for("errors.tool_error", {"onInvocation": 2})
            ...
            assert kitchen.state_of(url).executions == {"charge": 1}
    """

    def __init__(
        self,
        scenario: str = "baseline",
        params: Mapping[str, Any] | None = None,
        *,
        stateless: bool = False,
        json_response: bool = False,
        legacy_only: bool = False,
        port: int = 0,
        path: str = "/mcp",
        log_limit: int = 10_000,
        start_timeout_s: float = 10.0,
    ) -> None:
        """Configure the kitchen; `start()` (or `with`) serves it.

        Raises:
            ScenarioError: The default scenario or its params are invalid.
        """
        self.config = KitchenConfig(
            scenario=scenario,
            params=params,
            stateless=stateless,
            json_response=json_response,
            legacy_only=legacy_only,
            path=path,
            log_limit=log_limit,
        )
        parse_scenario(scenario, params)  # fail now, in the caller's thread
        self._requested_port = port
        self._start_timeout_s = start_timeout_s
        self._book = KitchenBook(log_limit)
        self._layer: FaultLayer | None = None
        self._server: _NotifyingServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None
        self._failure: BaseException | None = None

    @property
    def port(self) -> int:
        """The bound port (after `start()`)."""
        if self._port is None:
            raise RuntimeError("the kitchen is not started")
        return self._port

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT`."""
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def url(self) -> str:
        """The MCP endpoint of the default run (the scenario given at construction)."""
        return self.base_url + self.config.path

    def sse_url_for(
        self, scenario: str, params: Mapping[str, Any] | None = None, *, run: str | None = None
    ) -> str:
        """Like `url_for`, for the HTTP+SSE transport (2024-11-05): the `GET /sse` URL, whose
        `endpoint` event names a POST URL in the same run (status, delay and connection
        faults apply to its POSTs; answer faults do not, since answers go on the stream)."""
        run_id = run if run is not None else uuid.uuid4().hex[:12]
        return f"{self.base_url}{SSE_PATH}?{query_for(scenario, params, run_id)}"

    def url_for(
        self, scenario: str, params: Mapping[str, Any] | None = None, *, run: str | None = None
    ) -> str:
        """Return an MCP endpoint URL selecting `scenario` in a run of its own.

        Args:
            scenario: Scenario name.
            params: Its params (validated on the first request).
            run: Run id; a fresh one by default, so counters start at zero.
        """
        run_id = run if run is not None else uuid.uuid4().hex[:12]
        return f"{self.url}?{query_for(scenario, params, run_id)}"

    @property
    def state(self) -> KitchenState:
        """A snapshot of every POST and tool execution so far."""
        return self._book.snapshot()

    def state_of(self, url: str) -> KitchenState:
        """A snapshot restricted to the run that `url` selects."""
        return self.state.for_run(parse_query(url.partition("?")[2]).key)

    def reset(self) -> None:
        """Forget runs, counters, POST records and execution counts."""
        if self._layer is None:
            self._book.reset()
        else:
            self._layer.reset()

    def start(self) -> KitchenServer:
        """Bind, serve in a background thread, and return once connections are accepted."""
        if self._thread is not None:
            raise RuntimeError("a KitchenServer starts once")
        sock = bind_loopback(self._requested_port)
        self._port = sock.getsockname()[1]
        self._layer = build_kitchen_app(self.config, self._port, self._book)
        started = threading.Event()
        self._server = _NotifyingServer(
            _uvicorn_config(self._layer, self.config, quiet=True), started.set
        )
        server = self._server

        def serve() -> None:
            try:
                server.run(sockets=[sock])
            except BaseException as exc:  # SystemExit from a failed startup included
                self._failure = exc
            finally:
                sock.close()
                started.set()

        self._thread = threading.Thread(target=serve, name=f"kitchen-{self._port}", daemon=True)
        self._thread.start()
        if not started.wait(self._start_timeout_s) or self._failure is not None:
            self.stop()
            raise RuntimeError(f"the kitchen did not start: {self._failure!r}")
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop serving and join the thread (forcing exit if a graceful stop stalls)."""
        if self._server is None or self._thread is None:
            return
        self._server.should_exit = True
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            self._server.force_exit = True
            self._thread.join(timeout_s)
        if self._thread.is_alive():
            raise RuntimeError("the kitchen thread did not stop")

    def __enter__(self) -> KitchenServer:
        """Start the kitchen."""
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop the kitchen."""
        self.stop()


def run_kitchen(
    port: int = 0,
    scenario: str = "baseline",
    params: Mapping[str, Any] | None = None,
    *,
    stateless: bool = False,
    json_response: bool = False,
    legacy_only: bool = False,
    path: str = "/mcp",
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve a kitchen on 127.0.0.1 until SIGINT/SIGTERM; announce its MCP URL once serving.

    Args:
        port: TCP port, 0 for a free one.
        scenario: Default scenario for URLs that name none.
        params: Its params.
        stateless: The SDK's `stateless_http`.
        json_response: The SDK's `json_response`.
        legacy_only: Refuse 2026-07-28 requests like an mcp 1.x server.
        path: MCP endpoint path.
        announce: Called with the MCP URL once serving; prints it on stdout by default.

    Raises:
        ScenarioError: The scenario or its params are invalid.
    """
    config = KitchenConfig(
        scenario=scenario,
        params=params,
        stateless=stateless,
        json_response=json_response,
        legacy_only=legacy_only,
        path=path,
    )
    book = KitchenBook(config.log_limit)
    sock = bind_loopback(port)
    bound = sock.getsockname()[1]
    try:
        app = build_kitchen_app(config, bound, book)
    except BaseException:
        sock.close()
        raise
    url = f"http://{LOOPBACK}:{bound}{path}"

    def say_url() -> None:
        if announce is None:
            print(url, flush=True)  # the URL line is the contract with a parent process
        else:
            announce(url)

    server = _NotifyingServer(_uvicorn_config(app, config, quiet=False), say_url)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
