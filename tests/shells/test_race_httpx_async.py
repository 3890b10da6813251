"""Hedged reads through the async shells (httpx and httpx2, asyncio and trio).

The inner transport answers each tools/call POST after a scripted delay (by the order the
POSTs arrive) and counts the response bodies it handed out that were never closed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_safe_retry import (
    AsyncRetryTransport,
    CircuitBreaker,
    Idempotency,
    RetryPolicy,
    RetryTransport,
    get_record,
)
from mcp_safe_retry.core.attempt_kinds import AttemptKind
from mcp_safe_retry.core.budget import RetryBudget
from mcp_safe_retry.core.hedge_cancel import HEDGE_CANCEL_REASON
from mcp_safe_retry.core.servers import server_key
from mcp_safe_retry.httpx2 import AsyncRetryTransport as AsyncRetryTransport2
from mcp_safe_retry.httpx2 import RetryTransport as RetryTransport2
from mcp_safe_retry.policy import AdaptiveDelay
from tests.helpers import TrackedStream, ok_result, sse_event, tool_call

pytestmark = pytest.mark.anyio

URL = "http://127.0.0.1:9/mcp"
READ = RetryPolicy(tools={"lookup": Idempotency.READ}, hedge_after=0.05, max_hedges=1)
RETRYING = RetryPolicy(
    tools={"lookup": Idempotency.READ},
    hedge_after=0.01,
    max_hedges=1,
    max_retries=1,
    initial_backoff=0.0,
)

Answer = Callable[[dict[str, Any]], tuple[int, str, list[bytes]]] | Exception


def ok(request: dict[str, Any]) -> tuple[int, str, list[bytes]]:
    return 200, "application/json", [json.dumps(ok_result(request["id"])).encode()]


def sse_ok(request: dict[str, Any]) -> tuple[int, str, list[bytes]]:
    return 200, "text/event-stream", [sse_event(ok_result(request["id"]))]


def tool_error(request: dict[str, Any]) -> tuple[int, str, list[bytes]]:
    body = ok_result(request["id"], is_error=True, text="no such row")
    return 200, "application/json", [json.dumps(body).encode()]


def unavailable(request: dict[str, Any]) -> tuple[int, str, list[bytes]]:
    return 503, "text/plain", [b"busy"]


class Lagged:
    """An inner transport (either library) answering the n-th tools/call POST after
    ``plan[n]``'s delay with its answer (the last entry repeats)."""

    def __init__(self, library: Any, *plan: tuple[float, Answer]) -> None:
        self.library = library
        self.plan = list(plan)
        self.calls: list[dict[str, Any]] = []
        self.cancels: list[dict[str, Any]] = []
        self.streams: list[TrackedStream] = []

    @property
    def open(self) -> int:
        """Response bodies handed out and never closed."""
        return sum(1 for s in self.streams if not s.closed)

    async def handle_async_request(self, request: Any) -> Any:
        message = json.loads(await request.aread())
        if message.get("method") == "notifications/cancelled":
            self.cancels.append(message)
            return self._response(202, "application/json", [])
        self.calls.append(message)
        delay, answer = self.plan[min(len(self.calls), len(self.plan)) - 1]
        await anyio.sleep(delay)
        if isinstance(answer, Exception):
            raise answer
        return self._response(*answer(message))

    def _response(self, status: int, content_type: str, chunks: list[bytes]) -> Any:
        tracked = TrackedStream if self.library is httpx else TrackedStream2
        stream = tracked(chunks, self.streams, None)
        return self.library.Response(status, headers={"content-type": content_type}, stream=stream)

    async def aclose(self) -> None:
        pass


class TrackedStream2(TrackedStream, httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """A tracked body httpx2 accepts."""


class LaggedHttpx(Lagged, httpx.AsyncBaseTransport):
    pass


class LaggedHttpx2(Lagged, httpx2.AsyncBaseTransport):
    pass


def inner_of(library: Any, *plan: tuple[float, Answer]) -> Lagged:
    return (LaggedHttpx if library is httpx else LaggedHttpx2)(library, *plan)


LIBRARIES = [
    pytest.param((httpx, AsyncRetryTransport), id="httpx"),
    pytest.param((httpx2, AsyncRetryTransport2), id="httpx2"),
]


async def call(
    lib: tuple[Any, Any],
    *plan: tuple[float, Answer],
    policy: RetryPolicy = READ,
    request_id: Any = 7,
    headers: dict[str, str] | None = None,
    **options: Any,
) -> tuple[Any, Any, dict[str, Any]]:
    library, shell = lib
    inner = inner_of(library, *plan)
    transport = shell(inner, policy=policy, **options)
    async with library.AsyncClient(transport=transport, headers=headers) as client:
        response = await client.post(URL, json=tool_call("lookup", request_id))
        body = parsed(response.headers["content-type"], await response.aread())
    return response, inner, body


def parsed(content_type: str, body: bytes) -> Any:
    """A JSON body, or the one message an SSE body holds."""
    text = body.decode()
    if content_type.startswith("text/event-stream"):
        (data,) = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
        text = data
    return json.loads(text)


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_a_slow_first_copy_loses_to_its_hedge(lib: tuple[Any, Any]) -> None:
    response, inner, body = await call(lib, (5.0, ok), (0.0, ok))
    assert body["id"] == 7  # the caller's id, though the hedge's answer won
    record = get_record(response)
    assert record is not None
    assert [a.kind for a in record.attempts] == [AttemptKind.POST, AttemptKind.HEDGE]
    assert [a.fate for a in record.attempts] == ["lost", "won"]
    assert [str(a.retry_origin) for a in record.attempts] == ["none", "sdk"]
    assert record.attempts[1].wire_id == inner.calls[1]["id"] != 7
    assert record.post_count == 2 and record.outcome == "TOOL_SUCCESS"
    assert inner.open == 0  # the loser never answered; the winner's body was closed


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_a_fast_answer_sends_no_hedge(lib: tuple[Any, Any]) -> None:
    response, inner, body = await call(lib, (0.0, ok))
    record = get_record(response)
    assert record is not None
    assert len(inner.calls) == 1 and body["id"] == 7
    assert [a.fate for a in record.attempts] == ["won"]


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_the_loser_read_after_its_head_is_closed(lib: tuple[Any, Any]) -> None:
    # Both answer; the first copy's (slower) answer arrives while the call is settled.
    _, inner, body = await call(lib, (0.2, ok), (0.0, ok))
    await anyio.sleep(0.3)
    assert body["id"] == 7 and inner.open == 0


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_losers_get_notifications_cancelled_on_a_2025_session(lib: tuple[Any, Any]) -> None:
    headers = {"mcp-session-id": "s1", "mcp-protocol-version": "2025-06-18"}
    _, inner, body = await call(lib, (5.0, ok), (0.0, ok), headers=headers)
    assert body["id"] == 7
    assert [c["params"] for c in inner.cancels] == [{"requestId": 7, "reason": HEDGE_CANCEL_REASON}]


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_closing_is_the_cancellation_on_2026(lib: tuple[Any, Any]) -> None:
    headers = {"mcp-protocol-version": "2026-07-28"}
    _, inner, body = await call(lib, (5.0, ok), (0.0, ok), headers=headers)
    assert body["id"] == 7 and inner.cancels == [] and inner.open == 0


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_a_tool_error_is_the_answer(lib: tuple[Any, Any]) -> None:
    response, inner, body = await call(lib, (5.0, ok), (0.0, tool_error))
    record = get_record(response)
    assert record is not None
    assert body["result"]["isError"] is True and body["id"] == 7
    assert record.outcome == "TOOL_ERROR" and len(inner.calls) == 2


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_a_transient_failure_lets_the_other_copy_finish(lib: tuple[Any, Any]) -> None:
    response, inner, body = await call(lib, (0.3, ok), (0.0, unavailable))
    record = get_record(response)
    assert record is not None
    assert body["id"] == 7 and "result" in body
    assert [a.fate for a in record.attempts] == ["won", "failed"]
    assert record.post_count == 2 and inner.open == 0


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_sse_head_commits_the_call_to_its_copy(lib: tuple[Any, Any]) -> None:
    response, inner, body = await call(lib, (5.0, sse_ok), (0.0, sse_ok))
    assert response.headers["content-type"] == "text/event-stream"
    assert body["id"] == 7  # the hedge's events carry the caller's id
    record = get_record(response)
    assert record is not None
    assert [a.fate for a in record.attempts] == ["lost", "won"]
    assert inner.open == 0


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_an_unsafe_tool_is_never_hedged(lib: tuple[Any, Any]) -> None:
    policy = RetryPolicy(hedge_after=0.01, max_hedges=3)  # tools are UNSAFE by default
    _, inner, body = await call(lib, (0.2, ok), policy=policy)
    assert len(inner.calls) == 1 and body["id"] == 7


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_the_budget_stops_hedging_under_an_outage(lib: tuple[Any, Any]) -> None:
    budget = RetryBudget(burst=2.0, per_success=0.01)
    library, shell = lib
    inner = inner_of(library, (0.06, unavailable))
    policy = RetryPolicy(
        tools={"lookup": Idempotency.READ}, hedge_after=0.01, max_hedges=1, max_retries=0
    )
    transport = shell(inner, policy=policy, budget=budget)
    async with library.AsyncClient(transport=transport) as client:
        for n in range(10):
            await client.post(URL, json=tool_call("lookup", n))
    # Ten first copies and two hedges: the burst of two, then the empty budget said no.
    assert len(inner.calls) == 10 + 2 and inner.open == 0


def on_a_session(lib: tuple[Any, Any]) -> tuple[Any, Lagged, Any, Any]:
    """A client on a 2025 session whose tools/call POSTs all take 5 s."""
    library, shell = lib
    inner = inner_of(library, (5.0, ok))
    headers = {"mcp-session-id": "s1", "mcp-protocol-version": "2025-06-18"}
    transport = shell(inner, policy=READ)
    return library, inner, transport, library.AsyncClient(transport=transport, headers=headers)


async def hedge_out(inner: Lagged) -> None:
    """Until the hedge is out (its POST reached the inner transport), at most 5 s: a fixed
    sleep is not enough on a loaded machine."""
    with anyio.fail_after(5):
        while len(inner.calls) < 2:
            await anyio.sleep(0.01)


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_cancelling_the_caller_cancels_every_copy(lib: tuple[Any, Any]) -> None:
    _, inner, transport, client = on_a_session(lib)

    async def read() -> None:
        await client.post(URL, json=tool_call("lookup", 7))

    async with client, anyio.create_task_group() as tasks:
        tasks.start_soon(read)
        await hedge_out(inner)
        tasks.cancel_scope.cancel()
    assert len(inner.calls) == 2 and inner.open == 0
    record = transport.history.last()
    assert record is not None
    assert [a.fate for a in record.attempts] == ["abandoned", "abandoned"]
    # The caller's id is the caller's to cancel; the hedge's own id is ours.
    assert [c["params"]["requestId"] for c in inner.cancels] == [inner.calls[1]["id"]]


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_every_copy_failing_takes_the_retry_decision(lib: tuple[Any, Any]) -> None:
    policy = RETRYING
    response, inner, body = await call(
        lib, (0.05, unavailable), (0.05, unavailable), (0.0, ok), policy=policy
    )
    record = get_record(response)
    assert record is not None
    assert body["id"] == 7 and "result" in body
    assert len(inner.calls) <= policy.max_retries + policy.max_hedges + 1
    assert record.attempts[-1].fate == "won" and inner.open == 0


@pytest.mark.parametrize("shell", [RetryTransport, RetryTransport2])
def test_sync_shells_refuse_hedging(shell: Any) -> None:
    with pytest.raises(ValueError, match="need an async transport"):
        shell(policy=READ)


class SharedBreaker(CircuitBreaker):
    """Not this process's own kind of breaker: the shell awaits it (as a Redis one)."""

    answers_inline = False  # asked through the shell, as a shared one is

    counted = 0

    def record(
        self, key: str, *, failed: bool, retry_after: float | None = None, ends_call: bool = True
    ) -> None:
        self.counted += 1
        super().record(key, failed=failed, retry_after=retry_after, ends_call=ends_call)


_BREAKERS = (CircuitBreaker, SharedBreaker)
_OUTCOMES = st.sampled_from([ok, tool_error, unavailable, httpx.ReadError("reset")])


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    plan=st.lists(
        st.tuples(st.sampled_from([0.0, 0.005, 0.02]), _OUTCOMES), min_size=1, max_size=5
    ),
    read=st.booleans(),
    max_hedges=st.integers(1, 3),
    max_retries=st.integers(0, 2),
    breaker=st.one_of(
        st.none(),
        *(st.builds(kind, failure_threshold=st.integers(1, 3)) for kind in _BREAKERS),
    ),
)
async def test_posts_per_call_are_capped_and_unsafe_calls_post_once(
    plan: list[tuple[float, Answer]],
    read: bool,
    max_hedges: int,
    max_retries: int,
    breaker: CircuitBreaker | None,
) -> None:
    policy = RetryPolicy(
        tools={"lookup": Idempotency.READ if read else Idempotency.UNSAFE},
        hedge_after=0.004,
        max_hedges=max_hedges,
        max_retries=max_retries,
        initial_backoff=0.0,
    )
    library, shell = httpx, AsyncRetryTransport
    inner = inner_of(library, *plan)
    # With a breaker, whatever opens the circuit (a hedge's failure too) holds back what follows.
    transport = shell(inner, policy=policy, contain_failures=True, breaker=breaker)
    async with library.AsyncClient(transport=transport) as client:
        response = await client.post(URL, json=tool_call("lookup", "abc"))
        body = json.loads(await response.aread()) if response.status_code == 200 else None
    posts = len(inner.calls)
    assert posts <= (1 + max_retries + max_hedges if read else 1)
    if body is not None:
        assert body["id"] == "abc"
    assert inner.open == 0
    wire_ids = [c["id"] for c in inner.calls]
    assert len(set(wire_ids)) == len(wire_ids)  # every copy had an id of its own
    if isinstance(breaker, SharedBreaker):  # each POST that met its own ending, once
        record = transport.history.last()
        assert record is not None
        met = [a for a in record.attempts if a.kind != AttemptKind.HELD]
        assert breaker.counted == sum(a.fate not in {"lost", "abandoned"} for a in met)


async def test_otel_shows_the_copies_as_sibling_attempt_spans() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from mcp_safe_retry.otel import OpenTelemetryHook

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hook = OpenTelemetryHook(provider)
    await call((httpx, AsyncRetryTransport), (5.0, ok), (0.0, ok), hooks=[hook])
    spans = exporter.get_finished_spans()
    attempts = [s for s in spans if s.name == "POST"]
    (parent,) = [s for s in spans if s.name != "POST"]
    assert len(attempts) == 2
    assert {s.parent.span_id for s in attempts if s.parent} == {parent.context.span_id}
    by_number = {s.attributes["mcp_safe_retry.attempt"]: s.attributes for s in attempts}
    assert by_number[1]["mcp_safe_retry.fate"] == "lost"
    assert by_number[2]["mcp_safe_retry.fate"] == "won"
    assert by_number[2]["mcp_safe_retry.attempt_kind"] == "hedge"
    assert "mcp_safe_retry.attempt_kind" not in by_number[1]


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_the_callers_cancellation_reaches_every_copy(lib: tuple[Any, Any]) -> None:
    library, inner, transport, client = on_a_session(lib)
    outcome: list[BaseException] = []
    async with client:

        async def read() -> None:
            try:
                await client.post(URL, json=tool_call("lookup", 7))
            except library.ReadError as exc:
                outcome.append(exc)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            await hedge_out(inner)
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
            await client.post(URL, json={**cancel, "params": {"requestId": 7}})
    assert len(inner.calls) == 2 and inner.open == 0
    assert len(outcome) == 1  # the call ended at once, not after its 5 s
    # The caller's own notice names its id (the first copy); the hedge's is ours.
    assert [c["params"]["requestId"] for c in inner.cancels] == [7, inner.calls[1]["id"]]
    (record,) = [r for r in transport.history.records() if r.method == "tools/call"]
    assert [a.fate for a in record.attempts] == ["abandoned", "abandoned"]


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_a_hedged_read_renews_an_expired_session(lib: tuple[Any, Any]) -> None:
    # The copy's 404 settles the race; the renewal goes on in the shell's own loop.
    from tests.shells.test_session_renewal import INITIALIZE, VERSION, Server, _call

    library, shell = lib
    server = Server(library, True)
    transport = shell(server.transport(), policy=READ)
    async with library.AsyncClient(transport=transport) as client:
        opened = await client.post(URL, json=INITIALIZE)
        headers = {"mcp-session-id": opened.headers["mcp-session-id"]}
        headers["mcp-protocol-version"] = VERSION
        notice = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await client.post(URL, json=notice, headers=headers)
        server.seen.clear()
        server.live.clear()
        response = await client.post(URL, json=_call("lookup"), headers=headers)
        assert response.json()["id"] == 7
    assert [(s[1], s[2]) for s in server.seen] == [
        ("tools/call", "s-1"),
        ("initialize", None),
        ("notifications/initialized", "s-2"),
        ("tools/call", "s-2"),
    ]
    record = get_record(response)
    assert record is not None and record.complete
    kinds = [(a.number, str(a.kind)) for a in record.attempts]
    assert kinds == [(1, "post"), (2, "reinitialise"), (3, "post")]


ADAPTIVE = RetryPolicy(
    tools={"lookup": Idempotency.READ},
    hedge_after=AdaptiveDelay(floor=0.01, initial=0.05, ceiling=1.0),
    max_hedges=1,
)


@pytest.mark.parametrize("lib", LIBRARIES)
@pytest.mark.parametrize(
    ("plan", "samples"),
    [
        pytest.param([(0.0, ok)], 1, id="json-unhedged"),
        pytest.param([(0.0, sse_ok)], 1, id="sse-unhedged"),
        pytest.param([(5.0, ok), (0.0, ok)], 2, id="json-hedge-wins-first-censored"),
        pytest.param([(5.0, sse_ok), (0.0, sse_ok)], 2, id="sse-hedge-commits-first-censored"),
        pytest.param([(0.0, tool_error)], 0, id="a-failure-says-nothing-of-latency"),
    ],
)
async def test_adaptive_delay_learns_every_copy_of_json_and_sse_calls(
    lib: tuple[Any, Any], plan: list[tuple[float, Answer]], samples: int
) -> None:
    """Each copy of a settled call adds its own latency to the server's window, a copy
    cancelled unanswered a censored one, and a call committed to an SSE stream counts too."""
    library, shell = lib
    inner = inner_of(library, *plan)
    transport = shell(inner, policy=ADAPTIVE)
    async with library.AsyncClient(transport=transport) as client:
        response = await client.post(URL, json=tool_call("lookup", 7))
        assert parsed(response.headers["content-type"], await response.aread())["id"] == 7
    window = transport.engine.latencies.window(server_key(URL))
    assert (0 if window is None else window.count) == samples
    assert inner.open == 0
