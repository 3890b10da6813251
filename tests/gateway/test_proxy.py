"""The gateway as a proxy, over real sockets: a small upstream (raw ASGI under uvicorn on
127.0.0.1) that records what reached it, the gateway in front of it, and raw httpx clients
that send what MCP clients and hostile ones send."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcp_safe_retry import Idempotency, RetryPolicy
from mcp_safe_retry.hooks import JsonLinesSink
from tests.gateway_support import served_gateway
from tests.serving import Served

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
LOOKUP = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
          "params": {"name": "lookup", "arguments": {"key": "a"}}}  # fmt: skip


def answer(id: Any) -> bytes:
    result = {"content": [{"type": "text", "text": "ok"}]}
    return json.dumps({"jsonrpc": "2.0", "id": id, "result": result}).encode()


class Upstream:
    """Answers by the query's ``do``: a JSON answer (default), ``stream`` (an SSE answer
    whose response waits for ``release``), ``away`` / ``home`` (redirects), ``endpoint`` /
    ``foreign-endpoint`` (a legacy GET stream). Keeps every request it saw."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.release = threading.Event()
        self.disconnected = threading.Event()
        self.port = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        query = dict(p.split("=", 1) for p in scope["query_string"].decode().split("&") if p)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        self.seen.append({"method": scope["method"], "path": scope["path"],
                          "query": query, "headers": headers, "body": body})  # fmt: skip
        do = query.get("do", "")
        if do in ("away", "home"):
            where = "http://elsewhere.test/mcp" if do == "away" else "/mcp?do=moved"
            await send({"type": "http.response.start", "status": 307,
                        "headers": [(b"location", where.encode())]})  # fmt: skip
            await send({"type": "http.response.body", "body": b""})
            return
        if scope["method"] == "GET" and do in ("endpoint", "foreign-endpoint"):
            origin = f"http://127.0.0.1:{self.port}" if do == "endpoint" else "http://x.test"
            await self._events(send, f"event: endpoint\ndata: {origin}/messages/?session_id=s1")
            return
        if do == "stream":
            await self._events(send, 'event: message\ndata: {"jsonrpc":"2.0","method":"n"}')
            while not self.release.is_set():  # the client's hang-up ends the wait
                with _timeout(0.05):
                    if (await receive())["type"] == "http.disconnect":
                        self.disconnected.set()
                        return
            data = answer(json.loads(body)["id"]).decode()
            await send({"type": "http.response.body", "body": f"data: {data}\n\n".encode()})
            await send({"type": "http.response.body", "body": b""})
            return
        if scope["method"] == "DELETE":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        id = json.loads(body).get("id") if body else None
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"connection", b"x-hop"),
                                (b"x-hop", b"1"), (b"mcp-session-id", b"s1")]})  # fmt: skip
        await send({"type": "http.response.body", "body": answer(id)})

    async def _events(self, send: Any, event: str) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})  # fmt: skip
        await send({"type": "http.response.body", "body": f"{event}\n\n".encode(),
                    "more_body": True})  # fmt: skip
        if "endpoint" in event:
            await send({"type": "http.response.body", "body": b": later\n\n"})


class _timeout:
    """``anyio.move_on_after`` for the upstream's wait (it runs under uvicorn's asyncio)."""

    def __init__(self, seconds: float) -> None:
        import anyio

        self._scope = anyio.move_on_after(seconds)

    def __enter__(self) -> None:
        self._scope.__enter__()

    def __exit__(self, *exc: Any) -> bool:
        return bool(self._scope.__exit__(*exc))


@pytest.fixture
def upstream() -> Iterator[tuple[Upstream, str]]:
    app = Upstream()
    with Served(app) as served:
        app.port = served.port
        yield app, served.url("/mcp")


@pytest.fixture
def gateway(upstream: tuple[Upstream, str]) -> Iterator[tuple[Any, str]]:
    policy = RetryPolicy(tools={"lookup": Idempotency.READ})
    with served_gateway(upstream[1], policy=policy, max_body_bytes=1024) as served:
        yield served


def post(url: str, body: Any = LOOKUP, **headers: str) -> httpx.Response:
    return httpx.post(url, content=json.dumps(body), headers={**ACCEPT, **headers}, timeout=10)


def test_headers_cross_as_a_proxy_passes_them(
    upstream: tuple[Upstream, str], gateway: tuple[Any, str]
) -> None:
    response = post(
        gateway[1], **{"Mcp-Session-Id": "s1", "MCP-Protocol-Version": "2025-11-25",
                       "Mcp-Method": "tools/call", "Mcp-Name": "lookup",
                       "Authorization": "Bearer client-own", "Connection": "x-hop",
                       "X-Hop": "hop", "TE": "trailers", "Proxy-Authorization": "Basic p"},
    )  # fmt: skip
    assert response.status_code == 200 and response.json()["id"] == 7  # the client's id
    seen = upstream[0].seen[-1]["headers"]
    assert seen["mcp-session-id"] == "s1" and seen["mcp-protocol-version"] == "2025-11-25"
    assert seen["mcp-method"] == "tools/call" and seen["mcp-name"] == "lookup"
    assert seen["authorization"] == "Bearer client-own"
    assert seen["host"] == f"127.0.0.1:{upstream[0].port}"  # the upstream's, not ours
    for hop in ("x-hop", "te", "proxy-authorization", "keep-alive"):
        assert hop not in seen
    assert response.headers["mcp-session-id"] == "s1"
    assert "x-hop" not in response.headers  # named by the upstream's Connection header


def test_the_upstream_token_replaces_the_clients(upstream: tuple[Upstream, str]) -> None:
    with served_gateway(upstream[1], upstream_token="gateway-own") as (_, url):
        post(url, Authorization="Bearer client-own")
        post(url)
    assert [s["headers"]["authorization"] for s in upstream[0].seen] == ["Bearer gateway-own"] * 2


def test_client_tokens_are_required_and_never_forwarded(upstream: tuple[Upstream, str]) -> None:
    with served_gateway(upstream[1], client_tokens=["t1", "t2"]) as (_, url):
        assert post(url).status_code == 401
        refused = post(url, **{"X-MCP-Gateway-Token": "t3"})
        assert refused.status_code == 401
        assert "X-MCP-Gateway-Token" in refused.json()["error"]["message"]
        assert post(url, **{"X-MCP-Gateway-Token": "t2"}).status_code == 200
        health = httpx.get(url.replace("/mcp", "/healthz"), timeout=10)
        assert health.status_code == 200  # the orchestrator's probe needs no token
    assert len(upstream[0].seen) == 2  # the accepted call and the health probe
    assert all("x-mcp-gateway-token" not in s["headers"] for s in upstream[0].seen)


def test_an_absolute_form_target_is_refused(
    upstream: tuple[Upstream, str], gateway: tuple[Any, str]
) -> None:
    port = httpx.URL(gateway[1]).port
    assert port is not None
    body = json.dumps(LOOKUP).encode()
    request = (
        b"POST http://elsewhere.test/mcp HTTP/1.1\r\nHost: elsewhere.test\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
    ) % (len(body), body)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 400")
    assert b"absolute-form request targets are refused" in reply
    assert upstream[0].seen == []


def test_another_host_or_a_foreign_origin_is_refused(
    upstream: tuple[Upstream, str], gateway: tuple[Any, str]
) -> None:
    misdirected = post(gateway[1], Host="rebound.example")
    assert misdirected.status_code == 421
    assert "does not serve the host 'rebound.example'" in misdirected.json()["error"]["message"]
    assert post(gateway[1], Origin="http://evil.example").status_code == 403
    port = httpx.URL(gateway[1]).port
    assert post(gateway[1], Origin=f"http://127.0.0.1:{port}").status_code == 200
    assert len(upstream[0].seen) == 1


def test_an_oversized_body_is_refused_unread(
    upstream: tuple[Upstream, str], gateway: tuple[Any, str]
) -> None:
    big = {**LOOKUP, "params": {"name": "lookup", "arguments": {"key": "x" * 2000}}}
    declared = post(gateway[1], big)
    assert declared.status_code == 413 and "1024 bytes" in declared.json()["error"]["message"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: chunked, counted as it comes
        yield json.dumps(big).encode()

    streamed = httpx.post(gateway[1], content=chunks(), headers=ACCEPT, timeout=10)
    assert streamed.status_code == 413
    assert upstream[0].seen == []


def test_unknown_paths_and_methods_are_refused(
    upstream: tuple[Upstream, str], gateway: tuple[Any, str]
) -> None:
    base = gateway[1].removesuffix("/mcp")
    assert httpx.post(f"{base}/admin", content=b"{}", timeout=10).status_code == 404
    assert httpx.put(gateway[1], content=b"{}", timeout=10).status_code == 405
    assert httpx.get(f"{base}/metrics", timeout=10).status_code == 404  # not asked for
    assert upstream[0].seen == []


def test_redirects_stay_home_or_are_refused(
    upstream: tuple[Upstream, str], gateway: tuple[Any, str]
) -> None:
    away = post(gateway[1] + "?do=away")
    assert away.status_code == 502 and "another origin" in away.json()["error"]["message"]
    home = post(gateway[1] + "?do=home")
    assert home.status_code == 307 and home.headers["location"] == "/mcp?do=moved"


def test_an_sse_answer_is_relayed_event_by_event(
    upstream: tuple[Upstream, str], gateway: tuple[Any, str]
) -> None:
    with httpx.stream(
        "POST", gateway[1] + "?do=stream", content=json.dumps(LOOKUP), headers=ACCEPT, timeout=10
    ) as response:
        lines = response.iter_lines()
        first = next(lines)  # the notification arrives while the upstream still waits
        assert first.startswith("event: message") and not upstream[0].release.is_set()
        upstream[0].release.set()
        rest = [line for line in lines if line.startswith("data:")]
    assert json.loads(rest[-1].removeprefix("data: "))["id"] == 7


def test_a_client_hanging_up_cancels_upstream(
    upstream: tuple[Upstream, str], gateway: tuple[Any, str]
) -> None:
    with httpx.stream(
        "POST", gateway[1] + "?do=stream", content=json.dumps(LOOKUP), headers=ACCEPT, timeout=10
    ) as response:
        next(response.iter_lines())
    assert upstream[0].disconnected.wait(10)  # the gateway closed its upstream stream
    deadline = time.monotonic() + 10
    while not (calls := [r for r in gateway[0].history.records() if r.method == "tools/call"]):
        assert time.monotonic() < deadline, "the call was never recorded"
        time.sleep(0.01)
    attempt = calls[0].to_dict()["attempts"][-1]
    assert attempt["reason"] == "abandoned" and attempt["delivery"] == "may_have_run"
    assert attempt["detail"] == "closed by the caller before the response"


def test_delete_and_the_get_stream_are_forwarded(
    upstream: tuple[Upstream, str], gateway: tuple[Any, str]
) -> None:
    ended = httpx.delete(gateway[1], headers={"Mcp-Session-Id": "s1"}, timeout=10)
    assert ended.status_code == 200
    assert upstream[0].seen[-1]["method"] == "DELETE"
    assert upstream[0].seen[-1]["headers"]["mcp-session-id"] == "s1"


def test_a_legacy_endpoint_is_pointed_back_or_refused(
    upstream: tuple[Upstream, str], gateway: tuple[Any, str]
) -> None:
    with httpx.stream("GET", gateway[1] + "?do=endpoint", timeout=10) as response:
        text = response.read().decode()
    assert "data: /messages/?session_id=s1" in text and "127.0.0.1" not in text
    assert "/messages/" in gateway[0].paths
    with httpx.stream("GET", gateway[1] + "?do=foreign-endpoint", timeout=10) as response:
        assert "endpoint" not in response.read().decode()  # the stream ends instead


def test_health_says_whether_the_upstream_answers(upstream: tuple[Upstream, str]) -> None:
    with served_gateway(upstream[1]) as (_, url):
        up = httpx.get(url.replace("/mcp", "/healthz"), timeout=10)
    assert up.status_code == 200 and up.json()["status"] == "ok"
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: refused
        port = closed.getsockname()[1]
        with served_gateway(f"http://127.0.0.1:{port}/mcp") as (_, url):
            down = httpx.get(url.replace("/mcp", "/healthz"), timeout=10)
    assert down.status_code == 503
    assert down.json() == {"status": "unavailable", "upstream": {"error": "ConnectError"}}


def test_metrics_expose_the_calls(upstream: tuple[Upstream, str]) -> None:
    from mcp_safe_retry.gateway._metrics import PrometheusMetrics
    from mcp_safe_retry.otel import OpenTelemetryHook

    metrics = PrometheusMetrics()
    hook = OpenTelemetryHook(meter_provider=metrics.provider)
    with served_gateway(upstream[1], hooks=[hook], metrics=metrics) as (_, url):
        post(url)
        text = httpx.get(url.replace("/mcp", "/metrics"), timeout=10).text
    assert "# TYPE mcp_safe_retry_attempts counter" in text
    assert "mcp_safe_retry_attempts_total{" in text and 'gen_ai_tool_name="lookup"' in text
    assert "mcp_client_operation_duration_bucket{" in text


def test_no_secret_reaches_a_log_or_a_record(
    upstream: tuple[Upstream, str], caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    sink = JsonLinesSink(tmp_path / "records.jsonl")
    secrets = ["alice-secret", "gateway-token", "query-key", "upstream-own"]
    with (
        caplog.at_level(logging.DEBUG, logger="mcp_safe_retry"),
        served_gateway(
            upstream[1],
            hooks=[sink],
            client_tokens=["gateway-token"],
            upstream_token="upstream-own",
        ) as (_, url),
    ):
        headers = {"Authorization": "Bearer alice-secret", "X-MCP-Gateway-Token": "gateway-token"}
        post(url + "?api_key=query-key", **headers)
        post(url + "?do=away&api_key=query-key", **headers)
        post("http://user:alice-secret@" + url.removeprefix("http://"), **headers)
    sink.close()
    written = (tmp_path / "records.jsonl").read_text() + caplog.text
    assert "tools/call" in written and "POST /mcp 200" in caplog.text
    for secret in secrets:
        assert secret not in written
