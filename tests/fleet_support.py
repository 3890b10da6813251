"""Fleets of worker processes over a loopback HTTP server, for the fleet tests and the fleet
benchmark (``python -m benchmarks.fleet``): ``run_fleet`` sends a fleet into an outage, with
or without one ``RedisBudget`` shared by its workers; ``BreakerFleet`` runs workers sharing one
``RedisCircuitBreaker`` name, a trip in one holding the others back, a probe closing it.

Every process and server started here is stopped here (by its handle, never by name)."""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.connection
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from mcp_safe_retry import (
    Budget,
    CircuitOpenError,
    RetryBudget,
    RetryPolicy,
    RetryTransport,
    get_record,
)
from mcp_safe_retry.redis import RedisBudget, RedisCircuitBreaker

__all__ = ["BREAKER_OPEN_FOR", "BREAKER_REFRESH", "POLICY", "BreakerFleet", "run_fleet"]

POLICY = RetryPolicy(tools={"lookup": "read"})


class _Outage(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    posts = 0
    lock = threading.Lock()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with _Outage.lock:
            _Outage.posts += 1
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return None


class _Switch(BaseHTTPRequestHandler):
    """Answers every POST with 503 while ``down``, else with a JSON-RPC result for its id."""

    protocol_version = "HTTP/1.1"
    down = False
    posts = 0
    lock = threading.Lock()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with _Switch.lock:
            _Switch.posts += 1
        if _Switch.down:
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        request_id = json.loads(body).get("id")
        result = {"content": [{"type": "text", "text": "ok"}], "isError": False}
        out = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: Any) -> None:
        return None


BREAKER_REFRESH = 0.2
BREAKER_OPEN_FOR = 1.0


def _breaker_worker(
    url: str,
    redis_url: str,
    name: str,
    conn: multiprocessing.connection.Connection,
    open_for: float = BREAKER_OPEN_FOR,
) -> None:
    """Make one UNSAFE call per ``"call"`` received; answer with how it ended: the HTTP
    status, or ``"circuit_open"`` (with the POSTs its record counts)."""
    breaker = RedisCircuitBreaker(redis_url, name=name, refresh=BREAKER_REFRESH, open_for=open_for)
    transport = RetryTransport(httpx.HTTPTransport(), breaker=breaker, sleep=lambda _: None)
    with httpx.Client(transport=transport, timeout=10) as client:
        number = 0
        while conn.poll(60) and conn.recv() == "call":
            number += 1
            params = {"name": "charge", "arguments": {"n": number}}
            message = {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params}
            try:
                response = client.post(url, json=message)
            except CircuitOpenError as exc:
                record = get_record(exc)
                conn.send(("circuit_open", record.post_count if record else -1))
            else:
                conn.send((str(response.status_code), 1))
    breaker.close()


class BreakerFleet:
    """Worker processes sharing one ``RedisCircuitBreaker`` name, over a switchable server.

    ``call(i)`` has worker ``i`` make one call and returns ``(how it ended, POSTs)``;
    ``spawn()`` starts one more worker (a process that joins the fleet late);
    ``down`` switches the server between 503 to everything and healthy answers;
    ``posts`` counts what the server received; ``url`` is the server's, ``name`` the
    breaker's.
    """

    def __init__(
        self, redis_url: str, workers: int = 3, *, open_for: float = BREAKER_OPEN_FOR
    ) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Switch)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        _Switch.posts, _Switch.down = 0, False
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/mcp"
        self.name = f"breaker-{uuid.uuid4().hex[:8]}"
        self._redis_url = redis_url
        self._open_for = open_for
        self._conns: list[multiprocessing.connection.Connection] = []
        self._processes: list[Any] = []
        for _ in range(workers):
            self.spawn()

    def spawn(self) -> int:
        """Start one more worker process; its number."""
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe()
        process = context.Process(
            target=_breaker_worker,
            args=(self.url, self._redis_url, self.name, theirs, self._open_for),
        )
        process.start()
        self._conns.append(ours)
        self._processes.append(process)
        return len(self._processes) - 1

    @property
    def posts(self) -> int:
        return _Switch.posts

    @property
    def down(self) -> bool:
        return _Switch.down

    @down.setter
    def down(self, value: bool) -> None:
        _Switch.down = value

    def call(self, worker: int) -> tuple[str, int]:
        conn = self._conns[worker]
        conn.send("call")
        if not conn.poll(60):
            raise RuntimeError(f"worker {worker} did not answer")
        answer: tuple[str, int] = conn.recv()
        return answer

    def close(self) -> None:
        for conn in self._conns:
            conn.send("stop")
        for process in self._processes:
            process.join(10)
            if process.is_alive():
                process.kill()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> BreakerFleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _worker(url: str, redis_url: str | None, name: str, calls: int) -> None:
    budget: Budget = RedisBudget(redis_url, name=name) if redis_url is not None else RetryBudget()
    transport = RetryTransport(
        httpx.HTTPTransport(), policy=POLICY, budget=budget, sleep=lambda _: None
    )
    with httpx.Client(transport=transport, timeout=10) as client:
        for i in range(calls):
            params = {"name": "lookup", "arguments": {"n": i}}
            message = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
            client.post(url, json=message)
    if isinstance(budget, RedisBudget):
        budget.close()


def run_fleet(redis_url: str | None, *, workers: int = 4, calls: int = 250) -> int:
    """POSTs a fleet sent into an outage: with a shared budget when ``redis_url`` is given."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Outage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Outage.posts = 0
    url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
    name = f"fleet-{uuid.uuid4().hex[:8]}"
    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=_worker, args=(url, redis_url, name, calls)) for _ in range(workers)
    ]
    try:
        for process in processes:
            process.start()
        for process in processes:
            process.join(300)
            if process.exitcode != 0:
                raise RuntimeError(f"a worker ended with {process.exitcode}")
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
        server.shutdown()
        server.server_close()
    return _Outage.posts
