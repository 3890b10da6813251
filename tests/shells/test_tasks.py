"""The Tasks extension (SEP-2663) through the transports, in all four flavours: a task
answer is a valid answer of its own, a poll is a read retried after a transport failure
(``Mcp-Name`` kept), the terminal poll is the tool call's outcome, and the records link
each poll to the call that created its task.

The inner transport is a ``MockTransport`` playing a tasks server: ``tools/call`` answers a
``CreateTaskResult`` when the request declared the extension (else the tool result), each
``tasks/get`` answers by a script of statuses.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import httpx2
import pytest

import mcp_safe_retry
from mcp_safe_retry import Idempotency, RetryPolicy, get_record
from mcp_safe_retry import httpx2 as mcp_httpx2
from mcp_safe_retry.records import CallRecord, Delivery, Outcome, Reason

URL = "http://tasks.test/mcp"
LIBRARIES = {"httpx": (httpx, mcp_safe_retry), "httpx2": (httpx2, mcp_httpx2)}
FLAVOURS = [
    pytest.param(lib, mode, id=f"{mode}-{lib}")
    for lib in ("httpx", "httpx2")
    for mode in ("sync", "async")
]
DECLARED = {
    "io.modelcontextprotocol/clientCapabilities": {
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    },
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
}


def call(id: int, *, declared: bool = True) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "report", "arguments": {"n": 1}}
    if declared:
        params["_meta"] = DECLARED
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}


def task_request(id: int, method: str = "tasks/get", task_id: str = "t-1") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": {"taskId": task_id}}


def _task(status: str, **extra: Any) -> dict[str, Any]:
    return {
        "taskId": "t-1",
        "status": status,
        "createdAt": "2026-12-01T00:00:00Z",
        "lastUpdatedAt": "2026-12-01T00:00:01Z",
        "ttlMs": 60_000,
        "pollIntervalMs": 10,
        **extra,
    }


class Server:
    """Answers ``tools/call`` with a task (declared) or a result; ``tasks/get`` by ``polls``
    in order (a status name, ``503``, or ``"drop"``: the connection fails after sending)."""

    def __init__(self, lib: str, *polls: Any, tool_error: bool = False) -> None:
        self.lib = LIBRARIES[lib][0]
        self.polls = list(polls)
        self.tool_error = tool_error
        self.seen: list[tuple[str, str | None]] = []  # (method, Mcp-Name)

    def handler(self, request: Any) -> Any:
        body = json.loads(request.content)
        method = body["method"]
        self.seen.append((method, request.headers.get("mcp-name")))
        if method == "tools/call":
            meta = body["params"].get("_meta") or {}
            if "io.modelcontextprotocol/clientCapabilities" in meta:
                result: dict[str, Any] = {"resultType": "task", **_task("working")}
            else:
                result = {"content": [{"type": "text", "text": "done"}]}
            return self.lib.Response(
                200, json={"jsonrpc": "2.0", "id": body["id"], "result": result}
            )
        step = self.polls.pop(0)
        if step == 503:
            return self.lib.Response(503)
        if step == "drop":
            raise self.lib.ReadError("connection reset by peer", request=request)
        extra: dict[str, Any] = {}
        if step == "completed":
            content = [{"type": "text", "text": "the report"}]
            extra["result"] = {"content": content, "isError": self.tool_error}
        elif step == "failed":
            extra["error"] = {"code": -32603, "message": "the report failed"}
        result = {"resultType": "complete", **_task(step, **extra)}
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

    def post(self, body: dict[str, Any], name: str | None = None) -> CallRecord:
        headers = {} if name is None else {"mcp-name": name, "mcp-method": body["method"]}
        if self.mode == "sync":
            with self.http.Client(transport=self.transport) as client:
                response = client.post(URL, json=body, headers=headers)
        else:

            async def go() -> Any:
                async with self.http.AsyncClient(transport=self.transport) as client:
                    return await client.post(URL, json=body, headers=headers)

            response = anyio.run(go)
        record = get_record(response)
        assert record is not None
        return record


async def _no_sleep(_: float) -> None:
    return None


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_a_task_flow_reads_as_one_call_and_its_task(lib: str, mode: str) -> None:
    server = Server(lib, "working", 503, "input_required", "completed")
    client = Client(lib, mode, server)  # charge-like: the tool is UNSAFE
    created = client.post(call(1))
    assert created.outcome == Outcome.TASK_CREATED and created.post_count == 1
    (attempt,) = created.attempts
    assert attempt.delivery is Delivery.ANSWERED and attempt.decision is not None
    assert attempt.decision.reason is Reason.TASK_CREATED
    assert created.task is not None and created.task.task_id == "t-1"
    assert created.task.status == "working" and created.task.created_by is None
    assert created.to_dict()["task"] == {"taskId": "t-1", "status": "working", "createdBy": None}

    working = client.post(task_request(2), name="t-1")
    assert working.outcome == Outcome.TASK_WORKING and str(working.idempotency) == "read"
    retried = client.post(task_request(3), name="t-1")  # a 503, then input_required
    assert retried.outcome == Outcome.TASK_WORKING and retried.http_statuses == (503, 200)
    assert retried.task is not None and retried.task.status == "input_required"
    done = client.post(task_request(4), name="t-1")
    assert done.outcome == Outcome.TOOL_SUCCESS and done.classification is not None
    assert done.classification.layer.value == "application"
    for poll in (working, retried, done):
        assert poll.task is not None and poll.task.task_id == "t-1"
        origin = poll.task.created_by
        assert origin is not None and origin.request_id == 1 and origin.tool == "report"
        assert origin.started_at == created.started_at
    assert done.to_dict()["task"]["createdBy"]["requestId"] == 1
    polls = [name for method, name in server.seen if method == "tasks/get"]
    assert polls == ["t-1"] * 4  # Mcp-Name kept on the re-send


TERMINAL = {  # the terminal status, whether its result is a tool error -> outcome, code
    "completed-is-error": ("completed", True, Outcome.TOOL_ERROR, None),
    "failed": ("failed", False, Outcome.JSONRPC_ERROR, -32603),
    "cancelled": ("cancelled", False, Outcome.TASK_CANCELLED, None),
}


@pytest.mark.parametrize("case", sorted(TERMINAL))
@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_a_terminal_poll_is_the_tool_calls_outcome(lib: str, mode: str, case: str) -> None:
    terminal, tool_error, outcome, code = TERMINAL[case]
    server = Server(lib, terminal, tool_error=tool_error)
    client = Client(lib, mode, server)
    client.post(call(1))
    polled = client.post(task_request(2), name="t-1")
    assert polled.outcome == outcome and polled.post_count == 1  # an answer: not retried
    assert polled.classification is not None and polled.classification.code == code
    assert polled.task is not None and polled.task.status == terminal


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_without_the_declaration_a_task_answer_stays_invalid(lib: str, mode: str) -> None:
    class Undeclared(Server):
        def handler(self, request: Any) -> Any:
            body = json.loads(request.content)
            result = {"resultType": "task", **_task("working")}
            return self.lib.Response(
                200, json={"jsonrpc": "2.0", "id": body["id"], "result": result}
            )

    client = Client(lib, mode, Undeclared(lib))
    record = client.post(call(1, declared=False))
    assert record.outcome == Outcome.INVALID_TOOL_RESULT and record.task is None
    assert record.classification is not None and "did not declare" in (
        record.classification.detail or ""
    )
    other = client.post({"jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": {}})
    assert other.outcome == Outcome.INVALID_ENVELOPE  # another method: unrecognised resultType


@pytest.mark.parametrize("method", ["tasks/cancel", "tasks/update"])
@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_acknowledgements_are_re_sent_after_a_drop(lib: str, mode: str, method: str) -> None:
    class Acknowledging(Server):
        def handler(self, request: Any) -> Any:
            body = json.loads(request.content)
            self.seen.append((body["method"], request.headers.get("mcp-name")))
            if len(self.seen) == 1:
                raise self.lib.ReadError("connection reset by peer", request=request)
            result = {"resultType": "complete"}
            return self.lib.Response(
                200, json={"jsonrpc": "2.0", "id": body["id"], "result": result}
            )

    server = Acknowledging(lib)
    client = Client(lib, mode, server, policy=RetryPolicy(tools={"*": Idempotency.UNSAFE}))
    record = client.post(task_request(7, method), name="t-1")
    assert record.outcome == Outcome.RPC_SUCCESS and record.post_count == 2
    assert str(record.idempotency) == "idempotent"
    assert server.seen == [(method, "t-1"), (method, "t-1")]


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_an_unsafe_call_is_held_while_its_task_runs_and_sent_once_it_ended(
    lib: str, mode: str
) -> None:
    server = Server(lib, "working", "completed")
    client = Client(lib, mode, server, contain_failures=True)  # "report" is UNSAFE: guarded
    assert client.post(call(1)).outcome == Outcome.TASK_CREATED
    held = client.post(call(2))  # the same call while its task is working: not sent
    assert held.outcome == Outcome.DUPLICATE_IN_FLIGHT and held.post_count == 0
    assert "its task 't-1' is still running" in (held.classification.detail or "")  # type: ignore[union-attr]
    assert client.post(task_request(3), name="t-1").outcome == Outcome.TASK_WORKING
    assert client.post(call(4)).outcome == Outcome.DUPLICATE_IN_FLIGHT  # still working
    assert client.post(task_request(5), name="t-1").outcome == Outcome.TOOL_SUCCESS
    again = client.post(call(6))  # a poll saw the task end: the same call is sent
    assert again.outcome == Outcome.TASK_CREATED and again.post_count == 1
    assert [m for m, _ in server.seen].count("tools/call") == 2
