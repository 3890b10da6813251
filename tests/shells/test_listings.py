"""The SDK's follow-up read through the transports, in all four flavours: a list read whose
re-fetch fails after its retries, or that the breaker holds back, is answered with its last
good answer, marked stale in the record; a read that follows an answer from the same
server passes an open circuit.

The inner transport is a ``MockTransport`` answering by a script (``"ok"``, a status, or
``"drop"``: the connection fails after sending).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import httpx2
import pytest

import mcp_safe_retry
from mcp_safe_retry import CircuitBreaker, Idempotency, RetryPolicy, get_record
from mcp_safe_retry import httpx2 as mcp_httpx2
from mcp_safe_retry.records import CallRecord, Outcome

URL = "http://lists.test/mcp"
LIBRARIES = {"httpx": (httpx, mcp_safe_retry), "httpx2": (httpx2, mcp_httpx2)}
FLAVOURS = [
    pytest.param(lib, mode, id=f"{mode}-{lib}")
    for lib in ("httpx", "httpx2")
    for mode in ("sync", "async")
]
TOOLS = {"tools": [{"name": "charge", "inputSchema": {"type": "object"}}], "ttlMs": 0}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


class Server:
    def __init__(self, lib: str, *steps: Any) -> None:
        self.lib = LIBRARIES[lib][0]
        self.steps = list(steps)
        self.posts = 0

    def handler(self, request: Any) -> Any:
        self.posts += 1
        step = self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]
        body = json.loads(request.content)
        if step == "drop":
            raise self.lib.ReadError("connection reset by peer", request=request)
        if isinstance(step, int):
            return self.lib.Response(step)
        if body["method"] == "tools/call":
            result: dict[str, Any] = {"content": [{"type": "text", "text": "charged"}]}
        else:
            result = {**TOOLS, "cacheScope": step} if step in ("public", "private") else TOOLS
        return self.lib.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": result})


class Client:
    def __init__(self, lib: str, mode: str, server: Server, **options: Any) -> None:
        http, package = LIBRARIES[lib]
        self.http = http
        inner = http.MockTransport(server.handler)
        if mode == "sync":
            self.transport = package.RetryTransport(inner, sleep=lambda _: None, **options)
        else:
            self.transport = package.AsyncRetryTransport(inner, sleep=_no_sleep, **options)
        self.mode = mode

    def post(self, body: dict[str, Any], **headers: str) -> tuple[Any, CallRecord]:
        if self.mode == "sync":
            with self.http.Client(transport=self.transport) as client:
                response = client.post(URL, json=body, headers=headers)
                response.read()
        else:

            async def go() -> Any:
                async with self.http.AsyncClient(transport=self.transport) as client:
                    answer = await client.post(URL, json=body, headers=headers)
                    await answer.aread()
                    return answer

            response = anyio.run(go)
        record = get_record(response)
        assert record is not None
        return response, record


async def _no_sleep(_: float) -> None:
    return None


@pytest.mark.parametrize("failure", [503, "drop"])
@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_a_failed_re_fetch_is_served_its_last_good_answer(
    lib: str, mode: str, failure: Any
) -> None:
    server = Server(lib, "ok", failure)
    client = Client(lib, mode, server)
    _, first = client.post(LIST)
    assert first.outcome == Outcome.RPC_SUCCESS and first.served_stale is None
    response, again = client.post({**LIST, "id": 2})
    assert response.status_code == 200
    assert response.json() == {"jsonrpc": "2.0", "id": 2, "result": TOOLS}  # the caller's id
    assert again.post_count == 3 and server.posts == 4  # its retries were spent first
    assert again.outcome == Outcome.RPC_SUCCESS
    assert again.served_stale is not None and again.served_stale["ageMs"] >= 0
    assert again.to_dict()["servedStale"] == again.served_stale
    assert again.classification is not None
    assert (again.classification.detail or "").startswith("served stale: the last good answer")
    assert all(a.classification.outcome != Outcome.RPC_SUCCESS for a in again.attempts)


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_without_a_good_answer_the_failure_stands(lib: str, mode: str) -> None:
    client = Client(lib, mode, Server(lib, 503))
    _, record = client.post(LIST)
    assert record.outcome == Outcome.HTTP_ERROR and record.served_stale is None


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_private_answers_stay_in_their_authorization_context(lib: str, mode: str) -> None:
    server = Server(lib, "private", "private", 503)
    client = Client(lib, mode, server, policy=RetryPolicy(max_retries=0))
    client.post(LIST, authorization="Bearer alice")
    _, bob = client.post({**LIST, "id": 2}, authorization="Bearer bob")
    assert bob.outcome == Outcome.RPC_SUCCESS  # bob's own good answer (the second step)
    _, anonymous = client.post({**LIST, "id": 3})  # no context of its own yet: not served
    assert anonymous.outcome == Outcome.HTTP_ERROR and anonymous.served_stale is None
    _, alice = client.post({**LIST, "id": 4}, authorization="Bearer alice")
    assert alice.outcome == Outcome.RPC_SUCCESS and alice.served_stale is not None


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_a_public_answer_serves_every_context(lib: str, mode: str) -> None:
    server = Server(lib, "public", 503)
    client = Client(lib, mode, server, policy=RetryPolicy(max_retries=0))
    client.post(LIST, authorization="Bearer alice")
    _, anonymous = client.post({**LIST, "id": 2})
    assert anonymous.served_stale is not None


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_a_read_the_breaker_holds_back_is_served_stale(lib: str, mode: str) -> None:
    """Past the follow-up window, an open circuit holds the read back: it is served stale."""
    now = [0.0]
    breaker = CircuitBreaker(failure_threshold=1, open_for=60.0, clock=lambda: now[0])
    server = Server(lib, "ok", 503)
    client = Client(lib, mode, server, breaker=breaker, clock=lambda: now[0])
    client.post(LIST)
    client.post({"jsonrpc": "2.0", "id": 9, "method": "ping"})  # 503s: the circuit opens
    now[0] = 30.0  # long after the last answer
    posts = server.posts
    response, held = client.post({**LIST, "id": 2})
    assert server.posts == posts  # nothing sent
    assert held.attempts[-1].classification.outcome == Outcome.CIRCUIT_OPEN
    assert held.outcome == Outcome.RPC_SUCCESS and held.served_stale is not None
    assert response.json()["result"] == TOOLS


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_a_read_that_follows_an_answer_passes_an_open_circuit(lib: str, mode: str) -> None:
    """The SDK's follow-up read right after a tools/call the server answered is sent even
    though other calls' failures opened the circuit meanwhile; a write is not."""
    now = [0.0]
    breaker = CircuitBreaker(failure_threshold=1, open_for=60.0, clock=lambda: now[0])
    server = Server(lib, "ok", "ok")
    client = Client(lib, mode, server, breaker=breaker, clock=lambda: now[0])
    charge = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "charge"}}
    _, charged = client.post(charge)
    assert charged.outcome == Outcome.TOOL_SUCCESS
    key = "http://lists.test/mcp"
    breaker.record(key, failed=True)  # another call's failure opens the circuit
    assert not breaker.allow(key)
    now[0] = 1.0  # within the follow-up window
    _, listed = client.post({**LIST, "id": 2})
    assert listed.outcome == Outcome.RPC_SUCCESS and listed.post_count == 1
    assert listed.served_stale is None  # sent and answered, not served from memory
    breaker.record(key, failed=True)
    with pytest.raises(mcp_safe_retry.CircuitOpenError):  # a write is held back
        client.post({**charge, "id": 3, "params": {"name": "other"}})
    policy = RetryPolicy(tools={"lookup": Idempotency.READ})
    reader = Client(lib, mode, Server(lib, "ok"), breaker=breaker, policy=policy)
    lookup = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "lookup"}}
    with pytest.raises(mcp_safe_retry.CircuitOpenError):  # another transport: no answer yet
        reader.post(lookup)


CHARGE = {
    "jsonrpc": "2.0",
    "id": 5,
    "method": "tools/call",
    "params": {"name": "charge", "arguments": {"amount": 5}},
}


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_a_failed_follow_up_read_with_none_to_serve_holds_the_calls_re_send(
    lib: str, mode: str
) -> None:
    """mcp 2.x lists the tools after a call whose tool it never listed, and fails the call
    when that read fails: the charge ran, its caller saw an error; its re-send is held."""
    server = Server(lib, "ok", 503)  # the charge is answered, every read after it a 503
    client = Client(lib, mode, server, contain_failures=True)
    _, charged = client.post(CHARGE)
    assert charged.outcome == Outcome.TOOL_SUCCESS
    _, listed = client.post(LIST)
    assert listed.outcome == Outcome.HTTP_ERROR and listed.served_stale is None
    posts = server.posts
    _, again = client.post({**CHARGE, "id": 6})
    assert again.outcome == Outcome.DUPLICATE_HELD and server.posts == posts
    assert again.duplicate_of is not None and again.duplicate_of.earlier.request_id == 5
    assert "follow-up list read failed" in (again.classification.detail or "")  # type: ignore[union-attr]


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_a_follow_up_read_served_stale_or_answered_holds_nothing(lib: str, mode: str) -> None:
    server = Server(lib, "ok", "ok", 503)  # a listing kept, a charge, then reads fail
    client = Client(lib, mode, server, contain_failures=True)
    client.post(LIST)
    client.post(CHARGE)
    _, listed = client.post({**LIST, "id": 2})
    assert listed.served_stale is not None  # the SDK's call_tool carries on
    server.steps = ["ok"]
    _, again = client.post({**CHARGE, "id": 6})
    assert again.outcome == Outcome.TOOL_SUCCESS  # two charges, each answered: both run


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_a_call_answered_without_running_is_not_held_by_a_failed_read(lib: str, mode: str) -> None:
    server = Server(lib, 503)  # the charge's 503 says it did not run; the read fails too
    client = Client(lib, mode, server, contain_failures=True)
    client.post(CHARGE)
    client.post(LIST)
    posts = server.posts
    _, again = client.post({**CHARGE, "id": 6})
    assert again.outcome == Outcome.HTTP_ERROR and server.posts == posts + 1  # sent
