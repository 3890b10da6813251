"""Reliability against a real server: the kitchen on 127.0.0.1, real sockets, the official client.

Every server here listens on 127.0.0.1 port 0 and is stopped by its fixture; every loop is
bounded in count and every wait in time. The official ``mcp`` 2.x client runs on asyncio
only, so its tests pin that backend; the raw httpx tests run on asyncio and trio.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_safe_retry import (
    AsyncRetryTransport,
    History,
    Idempotency,
    RetryBudget,
    RetryPolicy,
    RetryTransport,
    get_record,
)
from mcp_safe_retry.httpx2 import AsyncRetryTransport as AsyncRetryTransport2
from mcp_safe_retry.httpx2 import mcp_client
from mcp_safe_retry.kitchen import KitchenServer, KitchenState
from mcp_safe_retry.records import CONTAINED_ERROR_CODE, CallRecord, Outcome, Reason, RetryOrigin

pytestmark = pytest.mark.e2e

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ACCEPT = "application/json, text/event-stream"
CONTAINED = CONTAINED_ERROR_CODE
READ_LOOKUP = RetryPolicy(tools={"lookup": Idempotency.READ}, initial_backoff=0.001)
StartKitchen = Callable[..., KitchenServer]
asyncio_only = pytest.mark.parametrize("anyio_backend", ["asyncio"])


@pytest.fixture
def start_kitchen() -> Iterator[StartKitchen]:
    """Start kitchens with `KitchenServer` arguments; every one is stopped after the test."""
    started: list[KitchenServer] = []

    def start(*args: Any, **kwargs: Any) -> KitchenServer:
        kitchen = KitchenServer(*args, **kwargs).start()
        started.append(kitchen)
        return kitchen

    yield start
    for kitchen in started:
        kitchen.stop()


@pytest.fixture
def json_kitchen(start_kitchen: StartKitchen) -> KitchenServer:
    """A stateless kitchen answering JSON (2026-07-28 without a handshake).

    Started outside the test's event loop: the SDK server inside builds anyio primitives
    for the loop it is created under, and the kitchen runs its own asyncio loop.
    """
    return start_kitchen(stateless=True, json_response=True)


@dataclass(frozen=True)
class Era:
    """A started kitchen, the official client's `mode` for it, and the version it gets."""

    kitchen: KitchenServer
    mode: str
    version: str


@pytest.fixture(
    params=[
        # The SDK's default kitchen serves 2026-07-28, which the client's discover probe adopts.
        pytest.param(({}, "auto", MODERN), id="2026"),
        # A legacy-only kitchen refuses the probe like an mcp 1.x server: the client falls back.
        pytest.param(({"legacy_only": True}, "auto", LEGACY), id="2025-fallback"),
        # The same 2025-11-25 session, asked for directly.
        pytest.param(({}, "legacy", LEGACY), id="2025-mode-legacy"),
    ]
)
def era(request: pytest.FixtureRequest, start_kitchen: StartKitchen) -> Era:
    """A kitchen in one protocol era (see the params)."""
    config, mode, version = request.param
    return Era(start_kitchen(**config), mode, version)


@pytest.fixture(autouse=True)
def _kitchens_stop() -> Iterator[None]:
    """Fail a test that leaves a kitchen thread running."""
    yield
    left = [t.name for t in threading.enumerate() if t.name.startswith("kitchen-")]
    assert left == []


def lookup_value(key: str) -> str:
    """What the kitchen's `lookup` answers for `key`."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def modern_call(request_id: int | str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 `tools/call` body (no handshake needed in that era)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": tool, "arguments": arguments, "_meta": meta}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def modern_headers(tool: str) -> dict[str, str]:
    """The headers a 2026-07-28 client sends with a `tools/call`."""
    return {
        "accept": ACCEPT,
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": tool,
    }


def open_client_sockets(port: int) -> int | None:
    """Sockets of this host still open towards 127.0.0.1:`port` (None off Linux).

    Counts ESTABLISHED and CLOSE_WAIT client-side entries of /proc/net/tcp: a connection the
    client still holds, whether the server is still there or has already closed its side.
    """
    table = Path("/proc/net/tcp")
    if not sys.platform.startswith("linux") or not table.exists():
        return None
    count = 0
    for line in table.read_text().splitlines()[1:]:
        fields = line.split()
        remote_port = int(fields[2].split(":")[1], 16)
        if remote_port == port and fields[3] in ("01", "08"):
            count += 1
    return count


def tools_calls(state: KitchenState, tool: str | None = None) -> list[Any]:
    """The `tools/call` POSTs of a state, in arrival order."""
    return list(state.calls(tool))


def one_record(history: History, tool: str) -> CallRecord:
    """The only `tools/call` record for `tool` in a history."""
    records = [r for r in history.records() if r.method == "tools/call" and r.tool == tool]
    assert len(records) == 1, [r.to_dict() for r in records]
    return records[0]


class _Closing(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A real response body that tells its counter when it is closed."""

    def __init__(self, inner: Any, counter: Counting) -> None:
        self._inner = inner
        self._counter = counter
        self._closed = False

    def __iter__(self) -> Iterator[bytes]:
        yield from self._inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield chunk

    def _mark(self) -> None:
        if not self._closed:
            self._closed = True
            self._counter.closed_one()

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._mark()

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._mark()


class Counting(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """A real httpx transport whose responses are counted as they open and close."""

    def __init__(self, inner: httpx.HTTPTransport | httpx.AsyncHTTPTransport) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self.opened = 0
        self.closed = 0

    def closed_one(self) -> None:
        with self._lock:
            self.closed += 1

    def _wrap(self, response: httpx.Response) -> httpx.Response:
        with self._lock:
            self.opened += 1
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_Closing(response.stream, self),
            extensions=response.extensions,
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(self._inner, httpx.HTTPTransport)
        return self._wrap(self._inner.handle_request(request))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(self._inner, httpx.AsyncHTTPTransport)
        return self._wrap(await self._inner.handle_async_request(request))

    def close(self) -> None:
        assert isinstance(self._inner, httpx.HTTPTransport)
        self._inner.close()

    async def aclose(self) -> None:
        assert isinstance(self._inner, httpx.AsyncHTTPTransport)
        await self._inner.aclose()


# -- the connection pool under 1,000 failing calls ---------------------------------------

# (scenario, params, tool): every POST of the run is hit, so READ calls fail all 3 attempts.
_FAILURES: list[tuple[str, dict[str, Any], str]] = [
    ("errors.http_status_sequence", {"statusCodes": [503]}, "lookup"),
    ("errors.http_status_sequence", {"statusCodes": [503]}, "charge"),
    ("connection_abort", {"when": "before", "mode": "close", "times": None}, "lookup"),
    ("connection_abort", {"when": "after", "mode": "reset", "times": None}, "lookup"),
    ("connection_abort", {"when": "before", "mode": "partial", "times": None}, "lookup"),
    ("connection_abort", {"when": "after", "mode": "close", "times": None}, "charge"),
    ("connection_abort", {"when": "before", "mode": "reset", "times": None}, "charge"),
    ("sse_truncated", {"when": "before", "mode": "abrupt", "times": None}, "lookup"),
    ("sse_truncated", {"when": "after", "mode": "abrupt", "times": None}, "charge"),
    ("sse_truncated", {"when": "before", "mode": "clean", "times": None}, "charge"),
    ("errors.http_status_sequence", {"statusCodes": [502]}, "lookup"),
]


def test_pool_survives_1000_failing_calls(start_kitchen: StartKitchen) -> None:
    kitchen = start_kitchen(stateless=True, json_response=True, log_limit=5000)
    inner = Counting(httpx.HTTPTransport(limits=httpx.Limits(max_connections=4)))
    history = History(maxlen=2000)
    transport = RetryTransport(
        inner,
        policy=RetryPolicy(tools={"lookup": Idempotency.READ}, initial_backoff=0.0005),
        history=history,
        budget=RetryBudget(1e9, 1.0),  # no throttling: every READ call makes all 3 attempts
    )
    urls = [kitchen.url_for(scenario, params) for scenario, params, _ in _FAILURES]
    raised: list[str] = []
    statuses: list[int] = []
    slowest = [0.0]
    lock = threading.Lock()
    # A short pool timeout: a leaked connection shows up as a PoolTimeout, not a slow test.
    client = httpx.Client(transport=transport, timeout=httpx.Timeout(10.0, pool=5.0))

    def worker(first: int) -> None:
        # As many threads as connections: with more, requests queue for a connection, and
        # httpcore 1.0.9's sync pool can close a connection it already handed to a queued
        # request (encode/httpcore#1110: a read timeout or EBADF, with or without mcp-safe-retry).
        for n in range(first, 1000, 4):
            scenario_index = n % len(_FAILURES)
            tool = _FAILURES[scenario_index][2]
            arguments = {"key": f"k{n}", "amount": 1} if tool == "charge" else {"key": f"k{n}"}
            started = time.monotonic()
            try:
                response = client.post(
                    urls[scenario_index],
                    json=modern_call(n, tool, arguments),
                    headers=modern_headers(tool),
                )
            except httpx.TransportError as exc:
                with lock:
                    raised.append(type(exc).__name__)
            else:
                with lock:
                    statuses.append(response.status_code)
            with lock:
                slowest[0] = max(slowest[0], time.monotonic() - started)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads)
    failing_s = time.monotonic() - started

    assert "PoolTimeout" not in raised
    assert slowest[0] < 5.0  # no call waited on a connection or a read timeout
    assert len(raised) + len(statuses) == 1000
    records = [r for r in history.records() if r.method == "tools/call"]
    assert len(records) == 1000
    assert all(r.complete and r.outcome != "TOOL_SUCCESS" for r in records)
    read = [r for r in records if r.idempotency is Idempotency.READ]
    unsafe = [r for r in records if r.idempotency is Idempotency.UNSAFE]
    assert {r.post_count for r in read} == {3}
    assert {r.post_count for r in unsafe} == {1}
    posts = kitchen.state.calls()
    assert len(posts) == sum(r.post_count for r in records) == 3 * len(read) + len(unsafe)
    sockets_held = open_client_sockets(kitchen.port)
    assert sockets_held is None or sockets_held <= 4

    # The pool still has its connections to give: a normal call goes through at once.
    started = time.monotonic()
    ok = client.post(
        kitchen.url,
        json=modern_call("after", "lookup", {"key": "after"}),
        headers=modern_headers("lookup"),
        timeout=httpx.Timeout(5.0, pool=1.0),
    )
    normal_s = time.monotonic() - started
    assert ok.status_code == 200
    assert ok.json()["result"]["structuredContent"] == {
        "key": "after",
        "value": lookup_value("after"),
    }
    assert normal_s < 2.0, f"a normal call took {normal_s:.2f} s after {failing_s:.1f} s"
    client.close()
    # Every response the real transport produced was closed, the retried ones included. A
    # POST dropped before its status line produced none, and a dropped connection can also
    # take a status line already sent with it: hence <=.
    answered = sum(1 for p in posts if p.status is not None)
    assert inner.opened == inner.closed <= answered + 1
    assert open_client_sockets(kitchen.port) in (None, 0)


# -- containment with the official client -------------------------------------------------


@asynccontextmanager
async def connect(url: str, http: Any, mode: str) -> AsyncIterator[Client]:
    """An official client on the given httpx2 client, bounded in time."""
    with anyio.fail_after(20):
        async with Client(
            streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=10
        ) as client:
            yield client


@asyncio_only
@pytest.mark.anyio
async def test_without_containment_one_dropped_connection_ends_the_session(
    era: Era,
) -> None:
    kitchen, mode, version = era.kitchen, era.mode, era.version
    url = kitchen.url_for("connection_abort", {"when": "before"})
    history = History()
    transport = AsyncRetryTransport2(policy=READ_LOOKUP, history=history)  # containment off
    reached_second_call = False

    async def use_the_session() -> None:
        nonlocal reached_second_call
        async with connect(url, http, mode) as client:
            assert client.protocol_version == version
            # Not an MCPError: the call is cancelled as the SDK's task group goes down.
            with contextlib.suppress(MCPError):
                await client.call_tool("charge", {"key": "c1", "amount": 100})
            reached_second_call = True
            await client.call_tool("charge", {"key": "c2", "amount": 100})

    async with httpx2.AsyncClient(transport=transport, timeout=10) as http:
        with pytest.raises(ExceptionGroup) as raised:
            await use_the_session()
    # The transport error escaped the SDK's task group and tore the whole client down.
    assert raised.group_contains(httpx2.RemoteProtocolError, depth=None)
    assert not reached_second_call
    state = kitchen.state_of(url)
    assert [p.tool for p in tools_calls(state)] == ["charge"]
    assert state.executions == {}
    record = one_record(history, "charge")
    assert (record.outcome, record.post_count) == ("NETWORK_ERROR", 1)


@asyncio_only
@pytest.mark.anyio
async def test_containment_fails_one_call_and_the_session_goes_on(
    era: Era,
) -> None:
    kitchen, mode, version = era.kitchen, era.mode, era.version
    url = kitchen.url_for("connection_abort", {"when": "before"})
    history = History()
    async with (
        mcp_client(policy=READ_LOOKUP, history=history, timeout=10) as http,
        connect(url, http, mode) as client,
    ):
        assert client.protocol_version == version
        with pytest.raises(MCPError) as raised:
            await client.call_tool("charge", {"key": "c1", "amount": 100})
        # The next call, on the same client and the same session, works.
        after = await client.call_tool("charge", {"key": "c2", "amount": 100})
        looked_up = await client.call_tool("lookup", {"key": "a"})
    error = raised.value.error
    assert error.code == CONTAINED
    assert error.message.startswith("mcp-safe-retry: NETWORK_ERROR after 1 attempt(s)")
    assert isinstance(error.data, dict) and error.data["outcome"] == "NETWORK_ERROR"
    assert after.is_error is False
    assert after.structured_content == {
        "key": "c2",
        "amount": 100,
        "execution": 1,
        "chargeId": "ch_c2_1",
    }
    assert looked_up.structured_content == {"key": "a", "value": lookup_value("a")}
    state = kitchen.state_of(url)
    assert [p.tool for p in tools_calls(state)] == ["charge", "charge", "lookup"]
    assert state.executions_by_key == {"charge": {"c2": 1}, "lookup": {"a": 1}}
    sessions = {p.session_id for p in tools_calls(state)}
    assert len(sessions) == 1  # one session throughout (None: 2026-07-28 has none)
    assert (sessions == {None}) == (version == MODERN)
    assert [p.method for p in state.posts].count("initialize") == (0 if version == MODERN else 1)


# -- READ calls recover through the official client; UNSAFE calls are never re-sent ------

RECOVERABLE = [
    pytest.param("connection_abort", {"when": "before", "mode": "close"}, id="abort-before"),
    pytest.param("connection_abort", {"when": "after", "mode": "reset"}, id="abort-after-reset"),
    # sse_truncated always opens an SSE stream, whatever the era: it is the first answer that
    # is SSE. The re-issued answer is SSE in a 2025-11-25 session (the kitchen's SDK answers
    # with SSE unless json_response) and JSON in 2026-07-28, which the transport splices into
    # the stream the client is already reading.
    pytest.param("sse_truncated", {"when": "after", "events": 2}, id="sse-truncated-after"),
    pytest.param("sse_truncated", {"when": "before", "mode": "abrupt"}, id="sse-dropped-before"),
]


@asyncio_only
@pytest.mark.anyio
@pytest.mark.parametrize(("scenario", "params"), RECOVERABLE)
async def test_read_tool_survives_the_fault_through_the_official_client(
    era: Era, scenario: str, params: dict[str, Any]
) -> None:
    kitchen, mode, version = era.kitchen, era.mode, era.version
    url = kitchen.url_for(scenario, {**params, "tool": "lookup"})
    history = History()
    async with (
        mcp_client(policy=READ_LOOKUP, history=history, timeout=10) as http,
        connect(url, http, mode) as client,
    ):
        assert client.protocol_version == version
        result = await client.call_tool("lookup", {"key": "r1"})
    assert result.is_error is False
    assert result.structured_content == {"key": "r1", "value": lookup_value("r1")}
    posts = tools_calls(kitchen.state_of(url), "lookup")
    assert len(posts) == 2
    assert posts[0].fault == scenario and posts[1].fault is None
    assert posts[0].request_id != posts[1].request_id  # a re-send carries a fresh id
    record = one_record(history, "lookup")
    assert record.post_count == 2
    assert record.retry_origin is RetryOrigin.SDK
    first, second = record.attempts
    assert first.retry_origin is RetryOrigin.NONE and second.retry_origin is RetryOrigin.SDK
    assert first.decision is not None and first.decision.retry
    expected = Reason.NETWORK_ERROR if scenario == "connection_abort" else Reason.STREAM_INCOMPLETE
    assert first.decision.reason is expected
    if scenario == "sse_truncated":
        assert (first.content_type or "").startswith("text/event-stream")
    assert second.wire_id != first.wire_id


@asyncio_only
@pytest.mark.anyio
async def test_unsafe_charge_dropped_after_running_is_executed_once_and_never_resent(
    era: Era,
) -> None:
    kitchen, mode = era.kitchen, era.mode
    url = kitchen.url_for("connection_abort", {"when": "after", "tool": "charge"})
    history = History()
    async with (
        mcp_client(policy=READ_LOOKUP, history=history, timeout=10) as http,
        connect(url, http, mode) as client,
    ):
        with pytest.raises(MCPError) as raised:
            await client.call_tool("charge", {"key": "once", "amount": 500})
    assert raised.value.error.code == CONTAINED
    await anyio.sleep(0.2)  # anything late would reach the kitchen by now
    state = kitchen.state_of(url)
    assert len(tools_calls(state, "charge")) == 1
    assert state.executions_by_key == {"charge": {"once": 1}}
    record = one_record(history, "charge")
    assert record.post_count == 1
    assert record.attempts[0].decision is not None
    assert record.attempts[0].decision.reason is Reason.NOT_IDEMPOTENT


# -- cancellation against a real server ---------------------------------------------------


@pytest.mark.anyio
async def test_cancelling_during_a_long_backoff_sends_nothing_more(
    json_kitchen: KitchenServer,
) -> None:
    kitchen = json_kitchen
    url = kitchen.url_for("errors.http_status_sequence", {"statusCodes": [503, 200]})
    inner = Counting(httpx.AsyncHTTPTransport())
    policy = RetryPolicy(tools={"lookup": Idempotency.READ}, initial_backoff=10, jitter="none")
    transport = AsyncRetryTransport(inner, policy=policy)  # the real anyio.sleep
    async with httpx.AsyncClient(transport=transport, timeout=10) as client:
        with anyio.move_on_after(0.5) as scope:
            await client.post(
                url, json=modern_call(1, "lookup", {"key": "a"}), headers=modern_headers("lookup")
            )
        assert scope.cancelled_caught
        await anyio.sleep(0.5)
        posts = tools_calls(kitchen.state_of(url))
        assert [p.status for p in posts] == [503]
        assert inner.opened == inner.closed == 1
        record = transport.history.last()
        assert record is not None and record.complete
        assert record.post_count == 1 and record.http_statuses == (503,)
        assert record.classification is not None
        assert record.classification.outcome is Outcome.HTTP_ERROR
        assert record.attempts[-1].decision is not None
        assert record.attempts[-1].decision.reason is Reason.ABANDONED
        # The connection went back to the pool in a clean state: the next call reuses it.
        response = await client.post(
            url, json=modern_call(2, "lookup", {"key": "b"}), headers=modern_headers("lookup")
        )
        assert response.status_code == 200
        assert get_record(response) is not None
    assert open_client_sockets(kitchen.port) in (None, 0)
    assert inner.opened == inner.closed == 2


@pytest.mark.anyio
async def test_cancelling_a_call_in_flight_closes_its_connection(
    json_kitchen: KitchenServer,
) -> None:
    kitchen = json_kitchen
    url = kitchen.url_for("baseline", {"delayMs": 1000})
    inner = Counting(httpx.AsyncHTTPTransport())
    transport = AsyncRetryTransport(inner, policy=READ_LOOKUP)
    async with httpx.AsyncClient(transport=transport, timeout=10) as client:
        with anyio.move_on_after(0.3) as scope:
            await client.post(
                url, json=modern_call(1, "lookup", {"key": "a"}), headers=modern_headers("lookup")
            )
        assert scope.cancelled_caught
        # The half-done request's connection cannot be reused: it is closed, not pooled.
        assert open_client_sockets(kitchen.port) in (None, 0)
        await anyio.sleep(1.2)  # the kitchen finishes its delayed answer into a closed socket
        assert len(tools_calls(kitchen.state_of(url))) == 1
        assert inner.opened == inner.closed == 0  # no response ever reached the client
        record = transport.history.last()
        assert record is not None and record.post_count == 1
        assert record.classification is not None
        assert record.classification.error_kind == "cancelled"


# -- regressions of bugs the soak found (both fixed) -----------------------------------


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_sse_answer_closed_after_its_response_is_recorded_as_success() -> None:
    # The smallest reproduction: no server, no SDK; read up to the response event, then close.
    def handler(request: httpx.Request) -> httpx.Response:
        message = {
            "jsonrpc": "2.0",
            "id": json.loads(request.content)["id"],
            "result": {"content": [], "isError": False},
        }
        event = f"event: message\ndata: {json.dumps(message)}\n\n".encode()
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=event)

    transport = AsyncRetryTransport(httpx.MockTransport(handler))
    async with httpx.AsyncClient(transport=transport) as client:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "x", "arguments": {}},
        }
        async with client.stream("POST", "http://mcp.test/mcp", json=body) as response:
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    break
    record = get_record(response)
    assert record is not None
    assert record.outcome == "TOOL_SUCCESS", record.to_dict()["attempts"]


@asyncio_only
@pytest.mark.anyio
async def test_official_client_sse_records_tell_the_truth(start_kitchen: StartKitchen) -> None:
    kitchen = start_kitchen(legacy_only=True)
    history = History()
    # trust_annotations: lookup is READ only if the tools/list answer was learnt from.
    policy = RetryPolicy(trust_annotations=True, initial_backoff=0.001)
    url = kitchen.url_for("connection_abort", {"tool": "lookup"})
    async with (
        mcp_client(policy=policy, history=history, timeout=10) as http,
        connect(url, http, "legacy") as client,
    ):
        await client.list_tools()
        looked_up = await client.call_tool("lookup", {"key": "a"})  # aborted, then retried
    assert looked_up.structured_content == {"key": "a", "value": lookup_value("a")}
    outcomes = {r.method: r.outcome for r in history.records()}
    assert outcomes["initialize"] == "RPC_SUCCESS"
    assert outcomes["tools/list"] == "RPC_SUCCESS"
    assert outcomes["tools/call"] == "TOOL_SUCCESS"


def test_kitchen_answers_keepalive_requests_without_a_delayed_ack_stall(
    start_kitchen: StartKitchen,
) -> None:
    kitchen = start_kitchen()
    timings = []
    with httpx.Client(timeout=5) as client:
        for _ in range(9):  # one connection, reused: the first answer is always fast
            started = time.perf_counter()
            assert client.get(kitchen.base_url + "/kitchen/scenarios").status_code == 200
            timings.append(time.perf_counter() - started)
    median = sorted(timings[1:])[len(timings[1:]) // 2]
    assert median < 0.02, f"median keep-alive answer {median * 1000:.1f} ms"


# -- what the caller's client sees of a handed-on response -------------------------------


def test_handed_on_json_answer_is_timed_and_pooled_like_a_bare_one(
    json_kitchen: KitchenServer,
) -> None:
    """The client reads (and times) the answer itself: ``elapsed`` is set, the connection
    goes back to the pool, and a second call reuses it."""
    url = json_kitchen.url_for("baseline")
    inner = Counting(httpx.HTTPTransport())
    with httpx.Client(transport=RetryTransport(inner), timeout=10) as client:
        for request_id in (1, 2):
            response = client.post(
                url,
                json=modern_call(request_id, "lookup", {"key": "a"}),
                headers=modern_headers("lookup"),
            )
            assert response.status_code == 200 and response.is_closed
            assert response.elapsed.total_seconds() > 0
            assert response.json()["id"] == request_id
            record = get_record(response)
            assert record is not None and record.outcome == "TOOL_SUCCESS"
        assert inner.opened == inner.closed == 2
        assert open_client_sockets(json_kitchen.port) in (None, 1)


@pytest.mark.anyio
@pytest.mark.parametrize("flavour", ["httpx", "httpx2"])
async def test_handed_on_json_answer_is_timed_async(
    json_kitchen: KitchenServer, flavour: str
) -> None:
    url = json_kitchen.url_for("baseline")
    module: Any = httpx if flavour == "httpx" else httpx2
    wrapper: Any = AsyncRetryTransport if flavour == "httpx" else AsyncRetryTransport2
    async with module.AsyncClient(transport=wrapper(), timeout=10) as client:
        response = await client.post(
            url, json=modern_call(7, "lookup", {"key": "a"}), headers=modern_headers("lookup")
        )
        assert response.status_code == 200 and response.is_closed
        assert response.elapsed.total_seconds() > 0
        assert response.json()["id"] == 7
        record = get_record(response)
        assert record is not None and record.outcome == "TOOL_SUCCESS"
