"""Print the OpenTelemetry trace of one retried MCP tool call as an indented tree.

    pip install 'mcp-safe-retry[otel]'
    python examples/otel_trace.py

A scripted server (an httpx.MockTransport, no network) answers 503, 503, then a result;
the tool is declared safe to repeat, so the transport retries it. Spans go to the SDK's
in-memory exporter and are printed with their attributes and durations; the transport's
INFO log lines go to stderr.
"""

from __future__ import annotations

import itertools
import json
import logging
import time

import httpx
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import mcp_safe_retry
from mcp_safe_retry.otel import OpenTelemetryHook

SERVER_LATENCY = 0.02  # seconds


def scripted_server() -> httpx.MockTransport:
    statuses = itertools.chain([503, 503], itertools.repeat(200))

    def handle(request: httpx.Request) -> httpx.Response:
        time.sleep(SERVER_LATENCY)
        message = json.loads(request.content)
        code = next(statuses)
        if code != 200:
            return httpx.Response(code, text="upstream busy")
        content = [{"type": "text", "text": "Oslo: 4 °C, light rain"}]
        return httpx.Response(
            200,
            json={"jsonrpc": "2.0", "id": message["id"], "result": {"content": content}},
            headers={"mcp-session-id": "9f2c4e1a"},
        )

    return httpx.MockTransport(handle)


def print_tree(spans: list[ReadableSpan]) -> None:
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent else None
        children.setdefault(parent, []).append(span)
    roots = children.get(None, [])
    origin = min(s.start_time or 0 for s in spans)

    def show(span: ReadableSpan, depth: int) -> None:
        pad = "    " * depth
        start = ((span.start_time or 0) - origin) / 1e6
        length = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
        status = span.status.status_code.name
        if span.status.description:
            status += f" ({span.status.description})"
        print(f"{pad}{span.name}  [{span.kind.name}]  +{start:.1f} ms, {length:.1f} ms, {status}")
        for key, value in (span.attributes or {}).items():
            shown = f"{value:.3f}" if isinstance(value, float) else value
            print(f"{pad}    {key} = {shown}")
        assert span.context is not None
        for child in sorted(
            children.get(span.context.span_id, []), key=lambda s: s.start_time or 0
        ):
            show(child, depth + 1)

    for root in roots:
        show(root, 0)


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("mcp_safe_retry").setLevel(logging.INFO)

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    policy = mcp_safe_retry.RetryPolicy(
        tools={"get_forecast": "read"}, initial_backoff=0.1, jitter="none"
    )
    transport = mcp_safe_retry.RetryTransport(
        scripted_server(), policy=policy, hooks=[OpenTelemetryHook(tracer_provider=provider)]
    )
    request = {
        "jsonrpc": "2.0",
        "id": 42,
        "method": "tools/call",
        "params": {"name": "get_forecast", "arguments": {"city": "Oslo"}},
    }
    headers = {"mcp-protocol-version": "2025-11-25", "authorization": "Bearer not-in-the-trace"}
    with httpx.Client(transport=transport) as client:
        response = client.post("http://127.0.0.1:8931/mcp", json=request, headers=headers)
    response.raise_for_status()
    print_tree(list(exporter.get_finished_spans()))
    provider.shutdown()


if __name__ == "__main__":
    main()
