"""No record, JSON line, log line, span or metric ever holds a credential or a tool argument.

Secrets are planted everywhere a client or a server could put one: request headers, the
URL, tool arguments, resource URIs, an error's ``data``, the tail of an over-long error
message, a tool's error text, a result, response headers and a network error's text. Calls
go through a real RetryTransport with every output attached, and each output is searched.
"""

from __future__ import annotations

import io
import json
import logging

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mcp_safe_retry
import mcp_safe_retry.hooks
from mcp_safe_retry.instrumentation.redact import MESSAGE_CHARS, REDACTED, scrub, short_text
from tests.instrumentation.support import (
    FakeClock,
    Server,
    call,
    raise_error,
    result,
    rpc_error,
    transport,
)

SECRETS = {
    name: f"s3cr3t-{name}-7f1c9a"
    for name in (
        "auth",
        "cookie",
        "apikey",
        "proxyauth",
        "query",
        "argument",
        "uri",
        "data",
        "httpdata",
        "longmessage",
        "tooltext",
        "result",
        "setcookie",
        "neterror",
        "echoed",
    )
}
S = SECRETS
HEADERS = {
    "Authorization": f"Bearer {S['auth']}",
    "Cookie": f"session={S['cookie']}; theme=dark",
    "X-Api-Key": S["apikey"],
    "Proxy-Authorization": f"Basic {S['proxyauth']}",
}
URL = f"http://127.0.0.1:8931/mcp?api_key={S['query']}"
PADDING = "x" * (MESSAGE_CHARS + 30)  # pushes a secret past the log/span cut, not the 500 one


def run_calls(
    hooks: list[mcp_safe_retry.hooks.Hook],
) -> tuple[mcp_safe_retry.RetryTransport, Server]:
    server = Server(
        FakeClock(),
        [
            # tools/call: a JSON-RPC error with data and a long message; unsafe, no retry
            rpc_error(-32603, f"Internal error {PADDING} {S['longmessage']}", {"x": S["data"]}),
            # tools/list: 503 with a JSON-RPC body holding data, then a result with a secret
            rpc_error(-32000, "busy", {"token": S["httpdata"]}, http_status=503),
            result(
                {"tools": [{"name": "t", "description": S["result"]}]},
                **{"set-cookie": f"sid={S['setcookie']}", "mcp-session-id": "sess-1"},
            ),
            # tools/call: a tool error whose text hides a secret past the cut
            result(
                {
                    "content": [{"type": "text", "text": f"{PADDING} {S['tooltext']}"}],
                    "isError": True,
                }
            ),
            # resources/read: a network error whose text holds credentials, then an echo
            raise_error(
                httpx.ConnectError(
                    f"proxy http://u:{S['neterror']}@proxy.local/?token={S['neterror']} "
                    f"refused Authorization: Bearer {S['neterror']}"
                )
            ),
            rpc_error(-32602, f"bad request: api_key={S['echoed']} password: {S['echoed']}"),
        ],
    )
    t = transport(server, hooks)
    with httpx.Client(transport=t, headers=HEADERS) as client:
        secret_args = {"password": S["argument"], "note": f"Bearer {S['argument']}"}
        call(client, "tools/call", 1, url=URL, name="login", arguments=secret_args)
        call(client, "tools/list", 2, url=URL)
        call(client, "tools/call", 3, url=URL, name="login", arguments=secret_args)
        call(client, "resources/read", 4, url=URL, uri=f"file:///vault/{S['uri']}")
    # the secrets really were on the wire
    sent = [(dict(r.headers), r.url, r.content) for r in server.requests]
    wire = repr(sent)
    for name in ("auth", "cookie", "apikey", "proxyauth", "query", "argument", "uri"):
        assert S[name] in wire, name
    assert len(server.requests) == 6
    return t, server


def assert_clean(outputs: dict[str, str]) -> None:
    for where, text in outputs.items():
        assert text, f"{where} is empty: the check would prove nothing"
        leaked = [name for name, secret in SECRETS.items() if secret in text]
        assert not leaked, f"{where} leaks {leaked}"


def log_text(caplog: pytest.LogCaptureFixture) -> str:
    parts = []
    for record in caplog.records:
        if record.name.startswith("mcp_safe_retry"):
            parts.append(record.getMessage())
            parts.append(repr(vars(record)))
    return "\n".join(parts)


def test_records_hold_no_secret_in_any_field() -> None:
    t, _ = run_calls([])
    records = t.history.records()
    assert len(records) == 4
    for record in records:
        assert record.complete
        # repr() shows every field, the server's (500-character) messages included
        text = repr(record) + json.dumps(record.to_dict())
        for name in ("auth", "cookie", "apikey", "proxyauth", "query", "argument"):
            assert S[name] not in text, name
        for name in ("uri", "data", "httpdata", "result", "setcookie", "neterror"):
            assert S[name] not in text, name
    # what the record keeps of the arguments is a digest, and to_dict() leaves even that out
    assert len(records[0].arguments_digest) == 24
    assert "argumentsDigest" not in records[0].to_dict()
    # the server's message is kept, cut at 500 characters, in the classification only
    assert records[0].classification is not None
    assert S["longmessage"] in (records[0].classification.message or "")
    assert S["longmessage"] not in json.dumps(records[0].to_dict())


def test_logs_and_json_lines_hold_no_secret(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    buffer = io.StringIO()
    sink = mcp_safe_retry.hooks.JsonLinesSink(buffer)
    run_calls([sink])
    sink.flush()
    assert len(buffer.getvalue().splitlines()) == 4
    assert_clean({"logs": log_text(caplog), "json lines": buffer.getvalue()})
    # the scrubber, not luck: the echoed and network secrets were in the server's text
    assert f"api_key={REDACTED}" in log_text(caplog)
    assert f"proxy.local/?{REDACTED} refused Authorization: {REDACTED}" in buffer.getvalue()


def test_spans_metrics_logs_and_json_lines_hold_no_secret(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from mcp_safe_retry.otel import OpenTelemetryHook

    caplog.set_level(logging.DEBUG)
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    buffer = io.StringIO()
    sink = mcp_safe_retry.hooks.JsonLinesSink(buffer)
    hooks: list[mcp_safe_retry.hooks.Hook] = [
        sink,
        OpenTelemetryHook(tracer_provider, meter_provider),
    ]
    run_calls(hooks)
    sink.flush()

    spans = exporter.get_finished_spans()
    assert len(spans) == 4 + 6  # a span per call and per attempt
    metrics = reader.get_metrics_data()
    assert metrics is not None
    outputs = {
        "logs": log_text(caplog),
        "json lines": buffer.getvalue(),
        "spans": "\n".join(span.to_json() for span in spans),
        "metrics": metrics.to_json(),
    }
    assert_clean(outputs)
    # errors were recorded, with short texts
    descriptions = [s.status.description for s in spans if s.status.description]
    assert descriptions
    assert all(len(d) <= MESSAGE_CHARS for d in descriptions)
    tracer_provider.shutdown()
    meter_provider.shutdown()


# -- the scrubber itself ---------------------------------------------------------------

tokens = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._~+=-",
    min_size=6,
    max_size=40,
).map(lambda s: "tk" + s)


@given(tokens)
def test_scrub_removes_auth_schemes(token: str) -> None:
    for text in (
        f"Authorization: Bearer {token}",
        f"authorization=Basic {token}, retry later",
        f"got bearer {token}",
        f"Cookie: a={token}; b={token}",
        f"Set-Cookie: sid={token}; HttpOnly",
    ):
        assert token not in scrub(text), text


@given(tokens)
def test_scrub_removes_url_credentials_and_queries(token: str) -> None:
    for text in (
        f"connect to https://user:{token}@example.test/mcp failed",
        f"GET http://example.test/mcp?api_key={token}&x=1 -> 401",
        f"see https://example.test/p#{token}",
    ):
        assert token not in scrub(text), text


@given(tokens)
def test_scrub_removes_credential_key_values(token: str) -> None:
    for text in (
        f"password={token}",
        f'{{"api_key": "{token}"}}',
        f"client_secret: {token}",
        f"access_token='{token}'",
        f"X-Api-Key: {token}",
        f"token={token}",
    ):
        assert token not in scrub(text), text


def test_scrub_leaves_ordinary_text_alone() -> None:
    text = "Unknown tool: get_weather (-32602); try tools/list at http://127.0.0.1:8931/mcp"
    assert scrub(text) == text


@given(st.text(max_size=600), st.integers(min_value=0, max_value=300))
def test_short_text_is_never_longer_than_its_limit(text: str, limit: int) -> None:
    out = short_text(text, limit)
    if out is None:
        assert not text or limit == 0
    else:
        assert len(out) <= limit


def test_short_text_marks_the_cut() -> None:
    assert short_text("a" * 200) == "a" * (MESSAGE_CHARS - 1) + "…"
    assert short_text("short") == "short"
    assert short_text(None) is None
    assert short_text("") is None
