"""The Tasks extension end to end: fastmcp-tasks 4.1.4 (its in-memory backend) serving a
``task=True`` tool under uvicorn on 127.0.0.1, and a fastmcp ``Client`` (which declares the
extension and polls ``tasks/get`` itself) over ``mcp_safe_retry.httpx2.mcp_client``.

Before: the ``CreateTaskResult`` was ``INVALID_TOOL_RESULT``, ``tasks/*`` counted as UNSAFE,
and one 503 on a ``tasks/get`` failed the whole ``call_tool`` (-32603) while the task went on
running on the server. Now the task answer is ``TASK_CREATED``, the 503 is retried, the
``call_tool`` completes, and the records read as one call and its task.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from typing import Any

import anyio
import pytest
from fastmcp import Client, FastMCP
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp_tasks import TasksExtension

from mcp_safe_retry import History
from mcp_safe_retry.httpx2 import mcp_client
from mcp_safe_retry.records import CallRecord, Delivery, Outcome, Reason
from tests.serving import App, Message, Receive, Scope, Send, Served

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # fastmcp's client runs the official SDK, which is asyncio-based


def tasks_server(runs: Counter[str]) -> Any:
    server = FastMCP("tasks")
    server.add_extension(TasksExtension(url="memory://"))

    @server.tool(task=True)
    async def report(n: int) -> str:  # UNSAFE: no policy names it
        runs["report"] += 1
        await anyio.sleep(0.2)  # long enough for a poll or two to see it working
        return f"report {n}"

    @server.tool(task=True)
    async def broken(n: int) -> str:
        runs["broken"] += 1
        raise ValueError(f"broken {n}")

    return server


class FirstPollFails:
    """ASGI middleware: answers the ``nth`` ``tasks/get`` POST with a bare 503 (the server
    behind never sees it); everything else passes through."""

    def __init__(self, app: App, nth: int = 1) -> None:
        self.app = app
        self.nth = nth
        self.polls = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            method = json.loads(body).get("method")
        except ValueError:
            method = None
        if method == "tasks/get":
            self.polls += 1
            if self.polls == self.nth:
                await send({"type": "http.response.start", "status": 503, "headers": []})
                await send({"type": "http.response.body", "body": b""})
                return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def of(history: History, method: str) -> list[CallRecord]:
    return [r for r in history.records() if r.method == method]


async def test_a_task_flow_completes_with_one_503_on_a_poll_retried() -> None:
    runs: Counter[str] = Counter()
    history = History()
    factory = functools.partial(mcp_client, history=history)
    app = FirstPollFails(tasks_server(runs).http_app(path="/mcp"))
    with Served(app) as served:
        url = served.url("/mcp")
        with anyio.fail_after(30):
            async with Client(StreamableHttpTransport(url, httpx_client_factory=factory)) as c:
                result = await c.call_tool("report", {"n": 7})
    assert not result.is_error and "report 7" in str(result.content)
    assert runs == {"report": 1}  # one task, one run: the 503 did not make a second
    (created,) = [r for r in of(history, "tools/call") if r.tool == "report"]
    assert created.outcome == Outcome.TASK_CREATED and created.post_count == 1
    (attempt,) = created.attempts
    assert attempt.delivery is Delivery.ANSWERED and attempt.decision is not None
    assert attempt.decision.reason is Reason.TASK_CREATED
    assert created.task is not None
    task_id = created.task.task_id
    polls = of(history, "tasks/get")
    assert polls, "the client polled"
    for poll in polls:
        assert str(poll.idempotency) == "read"
        assert poll.task is not None and poll.task.task_id == task_id
        assert poll.task.created_by is not None
        assert poll.task.created_by.request_id == created.request_id
        assert poll.task.created_by.tool == "report"
    retried = [p for p in polls if 503 in p.http_statuses]
    assert len(retried) == 1 and retried[0].http_statuses == (503, 200)  # transparently
    assert polls[-1].outcome == Outcome.TOOL_SUCCESS  # the terminal poll: the call's outcome
    assert polls[-1].task is not None and polls[-1].task.status == "completed"
    assert all(p.outcome == Outcome.TASK_WORKING for p in polls[:-1])
    assert [s.rpc for s in served.requests("tools/call")] == ["tools/call"]  # sent once


async def test_a_task_whose_tool_raised_ends_as_the_tool_error() -> None:
    runs: Counter[str] = Counter()
    history = History()
    factory = functools.partial(mcp_client, history=history)
    with Served(tasks_server(runs).http_app(path="/mcp")) as served:
        url = served.url("/mcp")
        with anyio.fail_after(30):
            async with Client(StreamableHttpTransport(url, httpx_client_factory=factory)) as c:
                result = await c.call_tool("broken", {"n": 1}, raise_on_error=False)
    assert result.is_error and runs == {"broken": 1}
    last = of(history, "tasks/get")[-1]
    assert last.task is not None and last.task.status in {"completed", "failed"}
    # A tool that raised is a tool error (completed, isError) or the task's JSON-RPC error.
    assert last.outcome in {Outcome.TOOL_ERROR, Outcome.JSONRPC_ERROR}
    assert last.outcome != Outcome.RPC_SUCCESS
