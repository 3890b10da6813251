"""A scripted MCP server over httpx.MockTransport and a fake clock, for observability tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import httpx

import mcp_safe_retry
import mcp_safe_retry.hooks

URL = "http://127.0.0.1:8931/mcp"
LATENCY = 0.005  # seconds each scripted answer takes on the fake clock


class FakeClock:
    """Monotonic seconds that move only when the server answers or the transport sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)


Answer = Callable[[dict[str, Any]], httpx.Response]


def status(code: int, **headers: str) -> Answer:
    return lambda _msg: httpx.Response(code, headers=headers)


def result(value: dict[str, Any], **headers: str) -> Answer:
    return lambda msg: httpx.Response(
        200, json={"jsonrpc": "2.0", "id": msg["id"], "result": value}, headers=headers
    )


def rpc_error(
    code: int, message: str, data: Any = None, *, http_status: int = 200, **headers: str
) -> Answer:
    def answer(msg: dict[str, Any]) -> httpx.Response:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        body = {"jsonrpc": "2.0", "id": msg["id"], "error": error}
        return httpx.Response(http_status, json=body, headers=headers)

    return answer


def raise_error(exc: Exception) -> Answer:
    def answer(_msg: dict[str, Any]) -> httpx.Response:
        raise exc

    return answer


class Server:
    """Answers each POST with the next scripted answer; remembers what it was sent."""

    def __init__(self, clock: FakeClock, answers: Iterable[Answer]) -> None:
        self.clock = clock
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def script(self, *answers: Answer) -> None:
        self.answers.extend(answers)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        self.clock.now += LATENCY
        message = json.loads(request.content)
        return self.answers.pop(0)(message)


def transport(
    server: Server,
    hooks: Sequence[mcp_safe_retry.hooks.Hook] = (),
    *,
    policy: mcp_safe_retry.RetryPolicy | None = None,
    scenario: str | None = None,
) -> mcp_safe_retry.RetryTransport:
    return mcp_safe_retry.RetryTransport(
        httpx.MockTransport(server),
        policy=policy or mcp_safe_retry.RetryPolicy(jitter="none"),
        sleep=server.clock.sleep,
        clock=server.clock,
        hooks=hooks,
        scenario=scenario,
    )


def async_transport(
    server: Server, hooks: Sequence[mcp_safe_retry.hooks.Hook] = ()
) -> mcp_safe_retry.AsyncRetryTransport:
    return mcp_safe_retry.AsyncRetryTransport(
        httpx.MockTransport(server),
        policy=mcp_safe_retry.RetryPolicy(jitter="none"),
        sleep=server.clock.asleep,
        clock=server.clock,
        hooks=hooks,
    )


def body(method: str, request_id: int | str | None = 1, **params: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if request_id is not None:
        message["id"] = request_id
    if params:
        message["params"] = params
    return message


def call(
    client: httpx.Client,
    method: str,
    request_id: int | str | None = 1,
    headers: dict[str, str] | None = None,
    url: str = URL,
    **params: Any,
) -> httpx.Response:
    return client.post(url, json=body(method, request_id, **params), headers=headers)
