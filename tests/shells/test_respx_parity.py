"""respx parity: our transport over a respx-mocked inner transport behaves exactly as over
`httpx.MockTransport` (users test their own code with respx routes).

Each scenario runs three ways with the same scripted answers: over a `MockTransport`, over a
respx router used as the inner transport, and with `respx.mock` patching the default inner
transport (what a user's test does). The answers, the POSTs sent and the records agree.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from mcp_safe_retry import (
    AsyncRetryTransport,
    CallLedger,
    Idempotency,
    RetryPolicy,
    RetryTransport,
    get_record,
)
from mcp_safe_retry.policy import Jitter
from tests.helpers import ok_result, tool_call

pytestmark = pytest.mark.anyio
README = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
URL = "http://127.0.0.1:9/mcp"  # loopback: nothing leaves this machine if a mock slips
POLICY = RetryPolicy(tools={"lookup": Idempotency.READ}, jitter=Jitter.NONE)
Answer = Callable[[dict[str, Any]], httpx.Response] | Exception


def _ok(body: dict[str, Any]) -> httpx.Response:
    return httpx.Response(200, json=ok_result(body["id"]))


def _503(body: dict[str, Any]) -> httpx.Response:
    return httpx.Response(503)


SCENARIOS = [
    pytest.param("lookup", [_503, _ok], 2, id="read-retried-after-503"),
    pytest.param("charge", [_503, _ok], 1, id="unsafe-sent-once-after-503"),
    pytest.param("charge", [httpx.ConnectError("refused"), _ok], 2, id="unsafe-unsent-resent"),
    pytest.param("charge", [httpx.ReadError("reset"), _ok], 1, id="unsafe-after-sending-once"),
    pytest.param("lookup", [_503, _503, _503], 3, id="read-gives-up"),
]


def _handler(answers: list[Answer], sent: list[dict[str, Any]]) -> Any:
    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sent.append(body)
        answer = answers[min(len(sent), len(answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer(body)

    return handle


@contextmanager
def _inner(way: str, handle: Any) -> Iterator[httpx.MockTransport | httpx.HTTPTransport]:
    if way == "mock-transport":
        yield httpx.MockTransport(handle)
    elif way == "respx-router":
        router = respx.Router(assert_all_called=False)
        router.post(URL).mock(side_effect=handle)
        yield httpx.MockTransport(router.handler)
    else:  # respx.mock patches the default transport's connection pool, as in users' tests
        with respx.mock(assert_all_called=False) as router:
            router.post(URL).mock(side_effect=handle)
            yield httpx.HTTPTransport()


def _id(wire: Any) -> Any:
    """A re-send's id without the prefix each transport draws at random."""
    return re.sub(r"-[0-9a-f]+-(\d+)$", r"-\1", wire) if isinstance(wire, str) else wire


def _comparable(record: Any) -> Any:
    """The record without what differs between two runs by nature (times, id prefixes)."""
    data = record.to_dict()
    data.pop("startedAt")
    for attempt in data["attempts"]:
        attempt["wireId"] = _id(attempt["wireId"])
    return data


def _run(way: str, tool: str, answers: list[Answer]) -> tuple[Any, list[Any], Any]:
    sent: list[dict[str, Any]] = []
    with _inner(way, _handler(answers, sent)) as inner:
        transport = RetryTransport(  # a ledger per run: each run is a process of its own
            inner, policy=POLICY, sleep=lambda _: None, clock=lambda: 0.0, ledger=CallLedger()
        )
        with httpx.Client(transport=transport) as client:
            try:
                response = client.post(URL, json=tool_call(tool, id=5))
                outcome: Any = (response.status_code, response.content)
                record = get_record(response)
            except httpx.TransportError as exc:
                outcome = type(exc).__name__
                record = get_record(exc)
    return outcome, [{**body, "id": _id(body["id"])} for body in sent], _comparable(record)


@pytest.mark.parametrize(("tool", "answers", "posts"), SCENARIOS)
def test_respx_inner_transports_behave_as_mock_transport(
    tool: str, answers: list[Answer], posts: int
) -> None:
    baseline = _run("mock-transport", tool, answers)
    assert len(baseline[1]) == posts
    assert baseline[2]["complete"] is True and len(baseline[2]["attempts"]) == posts
    for way in ("respx-router", "respx-mock"):
        assert _run(way, tool, answers) == baseline, way


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_async_transport_over_a_respx_router() -> None:
    sent: list[dict[str, Any]] = []
    router = respx.Router()
    router.post(URL).mock(side_effect=_handler([_503, _ok], sent))

    async def no_sleep(_: float) -> None:
        return None

    transport = AsyncRetryTransport(
        httpx.MockTransport(router.async_handler), policy=POLICY, sleep=no_sleep
    )
    async with httpx.AsyncClient(transport=transport) as client:
        response = await client.post(URL, json=tool_call("lookup", id=5))
    assert response.json()["id"] == 5
    assert sent[0]["id"] == 5 and sent[1]["id"] != 5
    record = get_record(response)
    assert record is not None and record.http_statuses == (503, 200)
    router.assert_all_called()


def test_readme_respx_snippet_runs_as_pasted() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    (code,) = [block for block in blocks if "respx.mock" in block]
    namespace: dict[str, Any] = {"__name__": "readme"}
    exec(compile(code, "docs/testing.md", "exec"), namespace)
    namespace["test_lookup_is_retried_after_a_503"]()
