"""How the transport composes with the SDK's own recovery (issue 17), in all four shells.

Unit tests over a scripted inner transport of each library (nothing here needs a server:
the end-to-end proofs with the official clients are tests/e2e/test_sdk_recovery.py and
tests/mcp1/test_mcp1_recovery.py):

- the client's ``with``/``async with`` enters and exits the inner transport through ours;
- a stream the client resumes itself (events with ids) ends as it ended on the wire;
- ``server/discover`` and ``initialize`` fail with the transport error, never contained;
- a session the client ended with its own DELETE is never renewed;
- a redirect is a hop: no failure, and the request sent on keeps its own origin.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

import mcp_safe_retry
import mcp_safe_retry.httpx2
from mcp_safe_retry import History, RetryPolicy, get_record
from mcp_safe_retry.core.attempt_kinds import AttemptKind
from mcp_safe_retry.records import CONTAINED_ERROR_CODE, Outcome, Reason, RetryOrigin

pytestmark = pytest.mark.anyio
URL = "http://mcp.test/mcp"
SHELLS = [
    pytest.param(("httpx", False), id="httpx-sync"),
    pytest.param(("httpx", True), id="httpx-async"),
    pytest.param(("httpx2", False), id="httpx2-sync"),
    pytest.param(("httpx2", True), id="httpx2-async"),
]
NO_WAIT = RetryPolicy(initial_backoff=0.0, max_backoff=0.0)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=SHELLS)
def shell(request: pytest.FixtureRequest) -> Shell:
    library, is_async = request.param
    return Shell(library, is_async)


class Shell:
    """One of the four shells, with a client of its library and mode to drive it."""

    def __init__(self, library: str, is_async: bool) -> None:
        self.lib: ModuleType = importlib.import_module(library)
        self.is_async = is_async
        module = mcp_safe_retry if library == "httpx" else mcp_safe_retry.httpx2
        self.cls = module.AsyncRetryTransport if is_async else module.RetryTransport
        self.client_cls = self.lib.AsyncClient if is_async else self.lib.Client

    def mock(self, handler: Callable[[Any], Any]) -> Any:
        return self.lib.MockTransport(handler)

    def transport(self, inner: Any, **options: Any) -> Any:
        sleep: Any = _asleep if self.is_async else (lambda _: None)
        return self.cls(inner, sleep=sleep, **options)

    async def request(self, transport: Any, method: str, url: str = URL, **kw: Any) -> Any:
        """One request through a client over ``transport``; the response read whole."""
        options = {"follow_redirects": kw.pop("follow_redirects", False)}
        if self.is_async:
            async with self.lib.AsyncClient(transport=transport, **options) as client:
                return await client.request(method, url, **kw)
        with self.lib.Client(transport=transport, **options) as client:
            return client.request(method, url, **kw)

    async def stream(self, transport: Any, body: Any) -> tuple[bytes, BaseException | None]:
        """POST ``body`` and read the answer as it streams: its bytes, and what ended it."""
        chunks: list[bytes] = []
        request = self.lib.Request("POST", URL, json=body)
        try:
            if self.is_async:
                async with self.lib.AsyncClient(transport=transport) as client:
                    response = await client.send(request, stream=True)
                    try:
                        async for chunk in response.aiter_bytes():
                            chunks.append(chunk)
                    finally:
                        await response.aclose()
            else:
                with self.lib.Client(transport=transport) as client:
                    response = client.send(request, stream=True)
                    try:
                        chunks.extend(response.iter_bytes())
                    finally:
                        response.close()
        except self.lib.TransportError as exc:
            return b"".join(chunks), exc
        return b"".join(chunks), None


async def _asleep(seconds: float) -> None:
    return None


def rpc(method: str, id: Any = 1, **params: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if id is not None:
        message["id"] = id
    return message


def result(id: Any, method: str) -> dict[str, Any]:
    body: dict[str, Any] = {"content": [{"type": "text", "text": "ok"}]}
    if method == "initialize":
        body = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s"}}
    return {"jsonrpc": "2.0", "id": id, "result": body}


# -- 1. entering and exiting the inner transport ---------------------------------------------


def recording(shell: Shell) -> Any:
    """An inner transport that records how it is entered, exited and closed."""
    base = shell.lib.AsyncBaseTransport if shell.is_async else shell.lib.BaseTransport
    names = (
        ("__aenter__", "__aexit__", "aclose")
        if shell.is_async
        else ("__enter__", "__exit__", "close")
    )
    calls: list[str] = []

    def record(name: str) -> Callable[..., Any]:
        if shell.is_async:

            async def async_method(self: Any, *args: Any) -> Any:
                calls.append(name)
                return self if name.endswith("enter__") else None

            return async_method

        def method(self: Any, *args: Any) -> Any:
            calls.append(name)
            return self if name.endswith("enter__") else None

        return method

    cls = type("Recording", (base,), {name: record(name) for name in names})
    transport = cls()
    transport.calls = calls
    return transport


async def test_the_client_enters_and_exits_the_inner_transport_through_ours(shell: Shell) -> None:
    seen = []
    for wrap in (lambda inner: inner, shell.transport):
        inner = recording(shell)
        transport = wrap(inner)
        if shell.is_async:
            async with shell.client_cls(transport=transport):
                pass
            client = shell.client_cls(transport=transport)  # closed, never entered
            await client.aclose()
        else:
            with shell.client_cls(transport=transport):
                pass
            shell.client_cls(transport=transport).close()
        seen.append(inner.calls)
    bare, ours = seen
    assert ours == bare
    assert ours in (["__aenter__", "__aexit__", "aclose"], ["__enter__", "__exit__", "close"])


async def test_an_entered_transport_answers_as_its_entry_returned(shell: Shell) -> None:
    transport = shell.transport(shell.mock(lambda request: shell.lib.Response(204)))
    if shell.is_async:
        assert await transport.__aenter__() is transport
        await transport.__aexit__(None, None, None)
    else:
        assert transport.__enter__() is transport
        transport.__exit__(None, None, None)


# -- 2. a stream the client resumes ends as on the wire --------------------------------------


class Body:
    """An SSE body of either library and mode: these chunks, then (maybe) an error."""

    def __init__(self, chunks: list[bytes], fail: BaseException | None = None) -> None:
        self.chunks, self.fail = chunks, fail

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks
        if self.fail is not None:
            raise self.fail

    async def __aiter__(self) -> Any:
        for chunk in self.chunks:
            yield chunk
        if self.fail is not None:
            raise self.fail

    def close(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


def sse_answer(shell: Shell, chunks: list[bytes], fail: BaseException | None = None) -> Any:
    base = (shell.lib.SyncByteStream, shell.lib.AsyncByteStream)
    stream = type("SSEBody", (Body, *base), {})(chunks, fail)
    headers = {"content-type": "text/event-stream"}
    return shell.mock(lambda request: shell.lib.Response(200, headers=headers, stream=stream))


PRIMING = b"id: evt-1\nretry: 10\ndata: \n\n"
NOTE = b'event: message\nid: evt-2\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\n'
METHODS = ["tools/call", "tools/list", "resources/read", "ping", "prompts/get"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("chunks", [[PRIMING], [PRIMING, NOTE]], ids=["priming", "notified"])
async def test_a_resumable_stream_ends_as_it_ended_on_the_wire(
    shell: Shell, method: str, chunks: list[bytes]
) -> None:
    history = History()
    transport = shell.transport(sse_answer(shell, chunks), contain_failures=True, history=history)
    body, error = await shell.stream(transport, rpc(method, name="t"))
    assert error is None and body == b"".join(chunks)  # no contained -32010 appended
    (record,) = history.records()
    (attempt,) = record.attempts
    assert attempt.classification.outcome is Outcome.STREAM_INCOMPLETE
    assert attempt.decision is not None and attempt.decision.reason is Reason.RESUMABLE


async def test_a_resumable_stream_that_broke_raises_as_it_would_bare(shell: Shell) -> None:
    broken = shell.lib.ReadError("connection reset")
    transport = shell.transport(sse_answer(shell, [PRIMING], broken), contain_failures=True)
    body, error = await shell.stream(transport, rpc("tools/call", name="t"))
    assert body == PRIMING and error is broken  # the client resumes from evt-1 itself
    record = get_record(error)
    assert record is not None and record.attempts[-1].decision is not None
    assert record.attempts[-1].decision.reason is Reason.RESUMABLE


async def test_a_stream_without_ids_is_still_contained(shell: Shell) -> None:
    unnumbered = b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message"}\n\n'
    transport = shell.transport(sse_answer(shell, [unnumbered]), contain_failures=True)
    body, error = await shell.stream(transport, rpc("tools/call", name="t"))
    assert error is None and body.startswith(unnumbered)
    (event,) = [line for line in body[len(unnumbered) :].splitlines() if line.startswith(b"data:")]
    assert json.loads(event[5:])["error"]["code"] == CONTAINED_ERROR_CODE


# -- 3. discover and initialize: the transport error, never contained ------------------------


@pytest.mark.parametrize("method", ["server/discover", "initialize"])
async def test_a_verdict_method_fails_with_the_transport_error(shell: Shell, method: str) -> None:
    attempts: list[str] = []

    def refuse(request: Any) -> Any:
        attempts.append(json.loads(request.content)["method"])
        raise shell.lib.ConnectError("refused")

    transport = shell.transport(shell.mock(refuse), contain_failures=True, policy=NO_WAIT)
    with pytest.raises(shell.lib.ConnectError) as raised:
        await shell.request(transport, "POST", json=rpc(method))
    assert attempts == [method] * 3  # retried (a read), then raised as the SDK expects
    record = get_record(raised.value)
    assert record is not None and record.classification is not None
    assert record.classification.outcome is Outcome.NETWORK_ERROR


async def test_other_methods_are_still_contained(shell: Shell) -> None:
    def refuse(request: Any) -> Any:
        raise shell.lib.ConnectError("refused")

    transport = shell.transport(shell.mock(refuse), contain_failures=True, policy=NO_WAIT)
    response = await shell.request(transport, "POST", json=rpc("tools/list"))
    assert response.json()["error"]["code"] == CONTAINED_ERROR_CODE


# -- 4. a session the client ended stays ended -----------------------------------------------


class Server:
    """Sessions as a 2025-11-25 server keeps them: ``initialize`` opens one; DELETE ends
    it (or answers ``delete_status``); a request in an unknown session gets 404."""

    def __init__(self, shell: Shell, delete_status: int = 200) -> None:
        self.lib = shell.lib
        self.delete_status = delete_status
        self.live: set[str] = set()
        self.seen: list[tuple[str, str | None]] = []

    def __call__(self, request: Any) -> Any:
        session = request.headers.get("mcp-session-id")
        if request.method == "DELETE":
            self.seen.append(("DELETE", session))
            if self.delete_status == 200:
                self.live.discard(session)
            return self.lib.Response(self.delete_status)
        message = json.loads(request.content)
        method = message["method"]
        self.seen.append((method, session))
        if method == "initialize":
            new = f"session-{len(self.seen)}"
            self.live.add(new)
            answer = result(message["id"], method)
            return self.lib.Response(200, json=answer, headers={"mcp-session-id": new})
        if session not in self.live:
            return self.lib.Response(
                404,
                json={
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": -32600, "message": "Session not found"},
                },
            )
        if "id" not in message:
            return self.lib.Response(202)
        return self.lib.Response(200, json=result(message["id"], method))

    def expire(self) -> None:
        self.live.clear()


@pytest.mark.parametrize(
    ("delete_status", "renewed"),
    [
        pytest.param(None, True, id="server-expired"),
        pytest.param(200, False, id="client-deleted"),
        pytest.param(405, True, id="delete-refused"),
    ],
)
async def test_only_a_session_the_server_expired_is_renewed(
    shell: Shell, delete_status: int | None, renewed: bool
) -> None:
    server = Server(shell, delete_status or 200)
    history = History()
    transport = shell.transport(shell.mock(server), history=history)
    opened = await shell.request(
        transport, "POST", json=rpc("initialize", protocolVersion="2025-11-25")
    )
    session = opened.headers["mcp-session-id"]
    headers = {"mcp-session-id": session}
    if delete_status is not None:
        ended = await shell.request(transport, "DELETE", headers=headers)
        assert ended.status_code == delete_status
    server.expire()  # a 405 left the session alive: the server expires it later
    response = await shell.request(
        transport, "POST", json=rpc("tools/call", 7, name="t"), headers=headers
    )
    initializes = [method for method, _ in server.seen].count("initialize")
    record = history.records()[-1]
    if renewed:
        assert response.status_code == 200 and initializes == 2
        assert AttemptKind.REINITIALISE in [a.kind for a in record.attempts]
    else:
        assert response.status_code == 404 and initializes == 1
        assert response.json()["error"]["message"] == "Session not found"  # unchanged
        assert server.seen[-1] == ("tools/call", session)  # sent once, never re-sent
        (attempt,) = record.attempts
        assert attempt.decision is not None and attempt.decision.reason is Reason.NOT_RETRYABLE


# -- 8. a redirect is a hop ------------------------------------------------------------------


def redirecting(shell: Shell, posts: list[str], tool_error: bool = False) -> Any:
    def handler(request: Any) -> Any:
        posts.append(request.url.path)
        if request.url.path == "/mcp":
            return shell.lib.Response(307, headers={"location": "/mcp/"})
        message = json.loads(request.content)
        answer = result(message["id"], message["method"])
        answer["result"]["isError"] = tool_error
        return shell.lib.Response(200, json=answer)

    return shell.mock(handler)


async def test_a_redirect_the_client_follows_is_a_hop(shell: Shell) -> None:
    history, posts = History(), []
    transport = shell.transport(redirecting(shell, posts), history=history)
    for _ in range(2):
        response = await shell.request(
            transport, "POST", json=rpc("tools/call", name="charge"), follow_redirects=True
        )
        assert response.status_code == 200
    assert posts == ["/mcp", "/mcp/"] * 2
    records = history.records()
    assert [r.classification.outcome for r in records] == [
        Outcome.REDIRECT,
        Outcome.TOOL_SUCCESS,
    ] * 2
    assert {r.retry_origin for r in records} == {RetryOrigin.NONE}
    hop = records[0]
    assert hop.http_statuses == (307,) and hop.post_count == 1
    assert hop.attempts[0].decision is not None
    assert hop.attempts[0].decision.reason is Reason.REDIRECT


async def test_a_redirect_unfollowed_is_handed_on_as_it_came(shell: Shell) -> None:
    history, posts = History(), []
    transport = shell.transport(redirecting(shell, posts), history=history, contain_failures=True)
    response = await shell.request(transport, "POST", json=rpc("tools/call", name="charge"))
    assert response.status_code == 307 and response.headers["location"] == "/mcp/"
    assert posts == ["/mcp"]  # not re-sent: it is the client's to follow


async def test_a_redirect_keeps_an_application_resend_what_it_is(shell: Shell) -> None:
    """A hop neither remembers nor forgets a failed call: the re-sent call and the request
    sent on to the Location are both the application's re-send."""
    history, posts = History(), []
    failing = shell.transport(redirecting(shell, posts, tool_error=True), history=history)
    await shell.request(
        failing, "POST", json=rpc("tools/call", name="charge"), follow_redirects=True
    )
    # The same transport (one detector) sees the application send the call again.
    await shell.request(
        failing, "POST", json=rpc("tools/call", name="charge"), follow_redirects=True
    )
    origins = [r.retry_origin for r in history.records()]
    assert origins == [
        RetryOrigin.NONE,
        RetryOrigin.NONE,
        RetryOrigin.APPLICATION,
        RetryOrigin.APPLICATION,
    ]
