"""OpenTelemetryHook through real transports, checked with the SDK's in-memory exporter/reader."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import mcp_safe_retry
import mcp_safe_retry.hooks
from mcp_safe_retry.otel import OpenTelemetryHook
from mcp_safe_retry.records import CallRecord
from tests.instrumentation.support import (
    LATENCY,
    FakeClock,
    Server,
    async_transport,
    body,
    call,
    raise_error,
    result,
    rpc_error,
    status,
    transport,
)

NS = 1_000_000_000


class Otel:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def hook(self, **kwargs: Any) -> OpenTelemetryHook:
        return OpenTelemetryHook(self.tracer_provider, self.meter_provider, **kwargs)

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def metrics(self) -> dict[str, list[Any]]:
        data = self.reader.get_metrics_data()
        out: dict[str, list[Any]] = {}
        assert data is not None
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    out[metric.name] = list(metric.data.data_points)
        return out


@pytest.fixture
def otel() -> Iterator[Otel]:
    o = Otel()
    yield o
    o.tracer_provider.shutdown()
    o.meter_provider.shutdown()


def attrs_of(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def tree(spans: list[ReadableSpan]) -> tuple[ReadableSpan, list[ReadableSpan]]:
    roots = [s for s in spans if s.name != "POST"]
    assert len(roots) == 1, [s.name for s in spans]
    root = roots[0]
    children = sorted(
        (s for s in spans if s.name == "POST"), key=lambda s: attrs_of(s)["mcp_safe_retry.attempt"]
    )
    assert root.context is not None
    for child in children:
        assert child.parent is not None
        assert child.parent.span_id == root.context.span_id
        assert child.context is not None
        assert child.context.trace_id == root.context.trace_id
    return root, children


def trees(spans: list[ReadableSpan]) -> dict[str, tuple[ReadableSpan, list[ReadableSpan]]]:
    """Each call's span and its attempt spans, by the call span's name."""
    by_trace: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        assert span.context is not None
        by_trace.setdefault(span.context.trace_id, []).append(span)
    out = {}
    for group in by_trace.values():
        root, children = tree(group)
        out[root.name] = (root, children)
    return out


def test_retried_read_makes_one_call_span_and_a_child_per_attempt(otel: Otel) -> None:
    clock = FakeClock()
    server = Server(clock, [status(503), status(503), result({"tools": []})])
    t = transport(server, [otel.hook()])
    with httpx.Client(transport=t) as client:
        response = call(client, "tools/list", 7, headers={"mcp-session-id": "sess-9"})
    assert response.json()["result"] == {"tools": []}
    assert clock.slept == [0.2, 0.4]

    root, attempts = tree(otel.spans())
    assert root.name == "tools/list"
    assert root.kind is SpanKind.CLIENT
    assert root.status.status_code is StatusCode.UNSET
    assert dict(root.attributes or {}) == {
        "mcp.method.name": "tools/list",
        "jsonrpc.request.id": "7",
        "mcp.session.id": "sess-9",
        "network.transport": "tcp",
        "network.protocol.name": "http",
        "mcp_safe_retry.outcome": "RPC_SUCCESS",
        "mcp_safe_retry.layer": "protocol",
        "mcp_safe_retry.result_type": "complete",
        "mcp_safe_retry.idempotency": "read",
        "mcp_safe_retry.attempt_count": 3,
        "mcp_safe_retry.retry_origin": "none",
        "mcp_safe_retry.reason": "success",
    }

    assert [s.kind for s in attempts] == [SpanKind.CLIENT] * 3
    assert [attrs_of(s)["http.response.status_code"] for s in attempts] == [503, 503, 200]
    assert [attrs_of(s).get("http.request.resend_count") for s in attempts] == [None, 1, 2]
    assert [attrs_of(s).get("error.type") for s in attempts] == ["503", "503", None]
    assert [attrs_of(s)["mcp_safe_retry.decision"] for s in attempts] == ["retry", "retry", "stop"]
    assert [attrs_of(s)["mcp_safe_retry.reason"] for s in attempts] == [
        "retryable_status",
        "retryable_status",
        "success",
    ]
    assert [attrs_of(s)["mcp_safe_retry.retry_origin"] for s in attempts] == ["none", "sdk", "sdk"]
    assert [attrs_of(s)["mcp_safe_retry.backoff"] for s in attempts] == [0.0, 0.2, 0.4]
    assert [attrs_of(s).get("mcp_safe_retry.next_delay") for s in attempts] == [0.2, 0.4, None]
    wire_ids = [attrs_of(s)["jsonrpc.request.id"] for s in attempts]
    assert wire_ids[0] == "7"
    assert len(set(wire_ids)) == 3  # each retry goes out under a fresh id
    assert [s.status.status_code for s in attempts] == [
        StatusCode.ERROR,
        StatusCode.ERROR,
        StatusCode.UNSET,
    ]

    # explicit timing: the call spans the three answers and two backoffs
    assert root.start_time is not None
    assert root.end_time is not None
    assert root.end_time - root.start_time == pytest.approx((3 * LATENCY + 0.6) * NS, abs=1000)
    starts = [(s.start_time or 0) - root.start_time for s in attempts]
    assert starts == pytest.approx([0, (LATENCY + 0.2) * NS, (2 * LATENCY + 0.6) * NS], abs=1000)
    for span in attempts:
        assert span.start_time is not None
        assert span.end_time is not None
        assert span.end_time - span.start_time == pytest.approx(LATENCY * NS, abs=1000)
        assert root.start_time <= span.start_time
        assert span.end_time <= root.end_time
    record = t.history.last()
    assert record is not None
    assert root.start_time == round(record.started_at * NS)


def test_metrics_count_attempts_delays_and_call_durations(otel: Otel) -> None:
    server = Server(FakeClock(), [status(503), status(503), result({"tools": []})])
    with httpx.Client(transport=transport(server, [otel.hook()])) as client:
        call(client, "tools/list")
    metrics = otel.metrics()

    attempts = {
        (attrs_of(p)["mcp_safe_retry.outcome"], attrs_of(p)["mcp_safe_retry.decision"]): p.value
        for p in metrics["mcp_safe_retry.attempts"]
    }
    assert attempts == {("HTTP_ERROR", "retry"): 2, ("RPC_SUCCESS", "stop"): 1}
    for point in metrics["mcp_safe_retry.attempts"]:
        assert attrs_of(point)["mcp.method.name"] == "tools/list"

    (delays,) = metrics["mcp_safe_retry.retry.delay"]
    assert delays.count == 2
    assert delays.sum == pytest.approx(0.6)
    assert dict(delays.attributes) == {
        "mcp.method.name": "tools/list",
        "mcp_safe_retry.reason": "retryable_status",
    }

    (duration,) = metrics["mcp.client.operation.duration"]
    assert duration.count == 1
    assert duration.sum == pytest.approx(3 * LATENCY + 0.6)
    assert dict(duration.attributes) == {
        "mcp.method.name": "tools/list",
        "mcp_safe_retry.outcome": "RPC_SUCCESS",
    }
    assert list(duration.explicit_bounds)[:3] == [0.01, 0.02, 0.05]


def test_tool_call_span_name_and_tool_error(otel: Otel) -> None:
    long_text = "The weather service said no. " * 10
    server = Server(
        FakeClock(),
        [result({"content": [{"type": "text", "text": long_text}], "isError": True})],
    )
    with httpx.Client(transport=transport(server, [otel.hook()])) as client:
        call(client, "tools/call", 5, name="get_weather", arguments={"city": "Oslo"})
    root, (attempt,) = tree(otel.spans())
    assert root.name == "tools/call get_weather"
    attrs = root.attributes or {}
    assert attrs["gen_ai.tool.name"] == "get_weather"
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert attrs["error.type"] == "tool_error"
    assert attrs["mcp_safe_retry.outcome"] == "TOOL_ERROR"
    assert attrs["mcp_safe_retry.layer"] == "application"
    assert attrs["mcp_safe_retry.idempotency"] == "unsafe"
    assert "rpc.response.status_code" not in attrs
    assert root.status.status_code is StatusCode.ERROR
    description = root.status.description or ""
    assert description.startswith("The weather service said no.")
    assert len(description) == 120
    assert description.endswith("…")
    assert attrs_of(attempt)["error.type"] == "tool_error"
    assert attrs_of(attempt)["http.response.status_code"] == 200
    # the arguments are not there, not even as a digest
    assert "Oslo" not in str(root.to_json()) + str(attempt.to_json())


def test_jsonrpc_error_sets_error_type_to_the_code(otel: Otel) -> None:
    server = Server(FakeClock(), [rpc_error(-32602, "Unknown tool: nope")])
    with httpx.Client(transport=transport(server, [otel.hook()])) as client:
        call(client, "tools/call", 1, name="nope", arguments={})
    root, (attempt,) = tree(otel.spans())
    attrs = root.attributes or {}
    assert attrs["error.type"] == "-32602"
    assert attrs["rpc.response.status_code"] == "-32602"
    assert attrs["mcp_safe_retry.reason"] == "not_retryable"
    assert root.status.status_code is StatusCode.ERROR
    assert root.status.description == "Unknown tool: nope"
    assert attrs_of(attempt)["error.type"] == "-32602"


def test_unsafe_http_error_and_network_failures(otel: Otel) -> None:
    server = Server(
        FakeClock(),
        [
            status(500),
            raise_error(httpx.ConnectError("refused")),
            raise_error(httpx.ConnectError("refused")),
            raise_error(httpx.ConnectError("refused")),
        ],
    )
    with httpx.Client(transport=transport(server, [otel.hook()])) as client:
        call(client, "tools/call", 1, name="send_email", arguments={})
        with pytest.raises(httpx.ConnectError):
            call(client, "ping", 2)
    calls = trees(otel.spans())
    http_root, (http_attempt,) = calls["tools/call send_email"]
    assert attrs_of(http_root)["error.type"] == "HTTP_ERROR"
    assert attrs_of(http_root)["mcp_safe_retry.reason"] == "not_idempotent"
    assert attrs_of(http_attempt)["error.type"] == "500"
    assert http_root.status.status_code is StatusCode.ERROR

    net_root, net_attempts = calls["ping"]
    assert attrs_of(net_root)["error.type"] == "NETWORK_ERROR"
    assert attrs_of(net_root)["mcp_safe_retry.reason"] == "max_retries"
    assert [attrs_of(s)["mcp_safe_retry.error_kind"] for s in net_attempts] == ["connect"] * 3
    assert [attrs_of(s).get("http.response.status_code") for s in net_attempts] == [None] * 3
    assert [attrs_of(s)["error.type"] for s in net_attempts] == ["NETWORK_ERROR"] * 3
    assert net_root.status.description == "ConnectError: refused"


def test_call_span_is_a_child_of_the_current_span(otel: Otel) -> None:
    server = Server(FakeClock(), [result({})])
    tracer = otel.tracer_provider.get_tracer("app")
    with (
        tracer.start_as_current_span("agent step") as outer,
        httpx.Client(transport=transport(server, [otel.hook()])) as client,
    ):
        call(client, "ping")
    spans = {s.name: s for s in otel.spans()}
    ping = spans["ping"]
    assert ping.parent is not None
    assert ping.parent.span_id == outer.get_span_context().span_id
    # and it did not stay current
    assert trace.get_current_span() is trace.INVALID_SPAN


def test_notification_span_has_no_request_id(otel: Otel) -> None:
    def accepted(_msg: dict[str, Any]) -> httpx.Response:
        return httpx.Response(202)

    server = Server(FakeClock(), [accepted])
    with httpx.Client(transport=transport(server, [otel.hook()])) as client:
        client.post("http://127.0.0.1/mcp", json=body("notifications/initialized", None))
    root, (attempt,) = tree(otel.spans())
    assert root.name == "notifications/initialized"
    assert "jsonrpc.request.id" not in (root.attributes or {})
    assert "jsonrpc.request.id" not in (attempt.attributes or {})
    assert root.status.status_code is StatusCode.UNSET


def test_redact_can_hide_and_add_attributes_or_drop_spans(otel: Otel) -> None:
    def redact(attributes: dict[str, Any], record: CallRecord) -> dict[str, Any] | None:
        if record.method == "ping":
            return None
        if "http.request.method" in attributes:  # an attempt span
            return attributes if attributes["mcp_safe_retry.attempt"] > 1 else None
        attributes.pop("mcp.session.id", None)
        attributes["app.scenario"] = record.scenario or "none"
        return attributes

    server = Server(
        FakeClock(), [result({}), status(503), result({"tools": []}, **{"mcp-session-id": "s"})]
    )
    with httpx.Client(
        transport=transport(server, [otel.hook(redact=redact)], scenario="demo")
    ) as client:
        call(client, "ping", 1)
        call(client, "tools/list", 2)
    root, attempts = tree(otel.spans())
    assert root.name == "tools/list"
    assert "mcp.session.id" not in (root.attributes or {})
    assert (root.attributes or {})["app.scenario"] == "demo"
    assert (root.attributes or {})["mcp_safe_retry.scenario"] == "demo"
    assert [attrs_of(s)["mcp_safe_retry.attempt"] for s in attempts] == [2]


def test_max_message_chars_zero_keeps_no_text(otel: Otel) -> None:
    server = Server(FakeClock(), [rpc_error(-32000, "boom")])
    with httpx.Client(transport=transport(server, [otel.hook(max_message_chars=0)])) as client:
        call(client, "tools/call", 1, name="x", arguments={})
    root, (attempt,) = tree(otel.spans())
    assert root.status.status_code is StatusCode.ERROR
    assert root.status.description is None
    assert attempt.status.description is None


def test_a_broken_tracer_never_breaks_a_call(otel: Otel, monkeypatch: pytest.MonkeyPatch) -> None:
    hook = otel.hook()

    def boom(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("exporter exploded")

    monkeypatch.setattr(hook.tracer, "start_span", boom)
    server = Server(FakeClock(), [result({})])
    with httpx.Client(transport=transport(server, [hook])) as client:
        assert call(client, "ping").status_code == 200


@pytest.mark.anyio
async def test_async_transport_is_traced_the_same(otel: Otel) -> None:
    server = Server(FakeClock(), [status(502), result({"tools": []})])
    async with httpx.AsyncClient(transport=async_transport(server, [otel.hook()])) as client:
        response = await client.post("http://127.0.0.1/mcp", json=body("tools/list", 3))
    assert response.status_code == 200
    root, attempts = tree(otel.spans())
    assert root.name == "tools/list"
    assert [attrs_of(s)["http.response.status_code"] for s in attempts] == [502, 200]


def test_global_providers_are_the_default() -> None:
    hook = OpenTelemetryHook()
    server = Server(FakeClock(), [result({})])
    with httpx.Client(transport=transport(server, [hook])) as client:
        assert call(client, "ping").status_code == 200
    assert isinstance(hook, mcp_safe_retry.hooks.Hook)


def test_an_sse_answer_is_traced_when_the_stream_has_been_read(otel: Otel) -> None:
    def sse(msg: dict[str, Any]) -> httpx.Response:
        event = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": []}})
        return httpx.Response(
            200,
            content=f"event: message\ndata: {event}\n\n".encode(),
            headers={"content-type": "text/event-stream"},
        )

    server = Server(FakeClock(), [status(503), sse])
    with (
        httpx.Client(transport=transport(server, [otel.hook()])) as client,
        client.stream("POST", "http://127.0.0.1/mcp", json=body("tools/list", 9)) as response,
    ):
        assert otel.spans() == []  # the call is not over until its stream is read
        text = response.read().decode()
    assert '"id":9' in text.replace(" ", "")
    root, attempts = tree(otel.spans())
    assert attrs_of(root)["mcp_safe_retry.outcome"] == "RPC_SUCCESS"
    assert [attrs_of(s)["http.response.status_code"] for s in attempts] == [503, 200]
    assert attrs_of(attempts[1])["mcp_safe_retry.content_type"] == "text/event-stream"
