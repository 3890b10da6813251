"""A session the server expired (2025 era) is renewed once, in all four shells.

The inner transport is a small 2025-era server in a MockTransport: numbered sessions, any of
which the test expires. The client sends its initialize through the retry transport first
(so the transport has one to replay), then requests in a session the server forgot.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import httpx2
import pytest

import mcp_safe_retry
import mcp_safe_retry.httpx2
from mcp_safe_retry import Idempotency, RetryPolicy, get_record
from mcp_safe_retry.core.attempt_kinds import AttemptKind
from mcp_safe_retry.records import Outcome, Reason

pytestmark = pytest.mark.anyio
URL = "http://mcp.test/mcp"
POLICY = RetryPolicy(tools={"lookup": Idempotency.READ}, initial_backoff=0.0)
VERSION = "2025-11-25"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": VERSION,
        "capabilities": {"roots": {}},
        "clientInfo": {"name": "tester", "version": "1.0"},
    },
}
NOT_FOUND = {
    "jsonrpc": "2.0",
    "id": "server-error",
    "error": {"code": -32600, "message": "Session not found"},
}
SHELLS = [
    pytest.param(httpx, mcp_safe_retry.AsyncRetryTransport, httpx.AsyncClient, id="httpx-async"),
    pytest.param(httpx, mcp_safe_retry.RetryTransport, httpx.Client, id="httpx-sync"),
    pytest.param(
        httpx2, mcp_safe_retry.httpx2.AsyncRetryTransport, httpx2.AsyncClient, id="httpx2-async"
    ),
    pytest.param(httpx2, mcp_safe_retry.httpx2.RetryTransport, httpx2.Client, id="httpx2-sync"),
]


class Server:
    """A 2025-era MCP server: sessions it opens on initialize and forgets when told to.

    ``seen`` lists every request as (HTTP method, JSON-RPC method, session id, body);
    ``executions`` counts the tools run. ``initialize`` may be replaced to script a failing
    handshake; after ``hold(n)``, requests to an expired session wait until n arrived.
    """

    def __init__(self, library: Any, is_async: bool) -> None:
        self.library = library
        self.is_async = is_async
        self.live: set[str] = set()
        self.numbers = itertools.count(1)
        self.seen: list[tuple[str, str | None, str | None, Any]] = []
        self.executions: Counter[str] = Counter()
        self.initialize: Callable[[dict[str, Any]], Any] | None = None
        # When a new session is gone: "opened" (at once), "initialized" (after its handshake).
        self.expire_new: str | None = None
        self.unknown: set[str] = set()  # methods answered 404 outside any session
        self.cut_and_forget = False  # the next call's SSE answer breaks as its session ends
        self.held = 0
        self._arrived = 0
        self._barrier: threading.Barrier | None = None
        self._all_here: anyio.Event | None = None

    def hold(self, count: int) -> None:
        self.held = count
        self._barrier = threading.Barrier(count)
        self._all_here = anyio.Event()

    def transport(self) -> Any:
        return self.library.MockTransport(self.ahandle if self.is_async else self.handle)

    def handle(self, request: Any) -> Any:
        response, hold = self._answer(request)
        if hold:
            assert self._barrier is not None
            self._barrier.wait(timeout=10)
        return response

    async def ahandle(self, request: Any) -> Any:
        response, hold = self._answer(request)
        if hold:
            assert self._all_here is not None
            self._arrived += 1
            if self._arrived == self.held:
                self._all_here.set()
            with anyio.fail_after(10):
                await self._all_here.wait()
        return response

    def _answer(self, request: Any) -> tuple[Any, bool]:
        lib = self.library
        session = request.headers.get("mcp-session-id")
        body = json.loads(request.content) if request.content else None
        method = body.get("method") if isinstance(body, dict) else None
        self.seen.append((request.method, method, session, body))
        if session is not None and session not in self.live:
            return lib.Response(404, json=NOT_FOUND), self.held > 0
        if session is None and method in self.unknown:
            return lib.Response(404), False
        if request.method != "POST":
            return lib.Response(200 if request.method == "DELETE" else 405), False
        assert body is not None
        if method == "initialize":
            if self.initialize is not None:
                return self.initialize(body), False
            opened = f"s-{next(self.numbers)}"
            if self.expire_new != "opened":
                self.live.add(opened)
            result = {"protocolVersion": VERSION, "capabilities": {}, "serverInfo": {"name": "s"}}
            answer = {"jsonrpc": "2.0", "id": body["id"], "result": result}
            return lib.Response(200, json=answer, headers={"mcp-session-id": opened}), False
        if "id" not in body:
            if method == "notifications/initialized" and self.expire_new == "initialized":
                self.live.discard(session)  # type: ignore[arg-type]
            return lib.Response(202), False
        if method == "tools/call":
            self.executions[body["params"]["name"]] += 1
            if self.cut_and_forget:
                self.cut_and_forget = False
                self.live.clear()
                sse = {"content-type": "text/event-stream"}
                return lib.Response(200, headers=sse, content=b": working\n\n"), False
        result = {"content": [{"type": "text", "text": "ran"}], "tools": []}
        return lib.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": result}), False

    def sent(self, method: str) -> list[tuple[str, str | None, str | None, Any]]:
        return [s for s in self.seen if s[1] == method]


class Driver:
    """One shell over a Server; sync shells run in worker threads, so calls may overlap."""

    def __init__(self, library: Any, shell: Any, client: Any, **options: Any) -> None:
        self.is_async = client in (httpx.AsyncClient, httpx2.AsyncClient)
        self.server = Server(library, self.is_async)
        sleep = _no_sleep if self.is_async else (lambda _: None)
        self.transport = shell(self.server.transport(), policy=POLICY, sleep=sleep, **options)
        self.client = client(transport=self.transport)

    async def request(self, method: str, body: Any = None, session: str | None = None) -> Any:
        headers = {"mcp-protocol-version": VERSION} if session else {}
        if session:
            headers["mcp-session-id"] = session
        if self.is_async:
            response = await self.client.request(method, URL, json=body, headers=headers)
            await response.aread()
            return response
        return await anyio.to_thread.run_sync(
            lambda: self.client.request(method, URL, json=body, headers=headers)
        )

    async def post(self, body: Any, session: str | None = "s-1") -> Any:
        return await self.request("POST", body, session)

    async def start(self) -> None:
        """The client's handshake, through the retry transport: session s-1."""
        response = await self.post(INITIALIZE, session=None)
        assert response.headers["mcp-session-id"] == "s-1"
        notified = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert notified.status_code == 202
        self.server.seen.clear()


def reasons(response: Any) -> list[Reason]:
    """The reasons of the decisions that followed each attempt of the response's call."""
    record = get_record(response)
    assert record is not None
    return [a.decision.reason for a in record.attempts if a.decision]


async def expired(library: Any, shell: Any, client: Any) -> Driver:
    """A driver whose client opened session s-1, which the server then forgot."""
    d = Driver(library, shell, client)
    await d.start()
    d.server.live.clear()
    return d


async def _no_sleep(_: float) -> None:
    return None


def _call(tool: str, request_id: Any = 7) -> dict[str, Any]:
    params = {"name": tool, "arguments": {"key": "a"}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


@pytest.mark.parametrize(
    "message",
    [
        pytest.param(_call("lookup"), id="read-call"),
        pytest.param(_call("charge"), id="unsafe-call"),
        pytest.param({"jsonrpc": "2.0", "id": "l", "method": "tools/list"}, id="tools-list"),
        pytest.param({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}, id="notice"),
    ],
)
@pytest.mark.parametrize(("library", "shell", "client"), SHELLS)
async def test_a_404_for_the_session_renews_it_once_and_resends(
    library: Any, shell: Any, client: Any, message: dict[str, Any]
) -> None:
    d = await expired(library, shell, client)
    response = await d.post(message)
    assert response.status_code == (200 if "id" in message else 202)
    if "id" in message:
        assert response.json()["id"] == message["id"]  # the caller's id is back
    # The 404, the replayed handshake outside the session, the request in the new one.
    assert [(s[1], s[2]) for s in d.server.seen] == [
        (message["method"], "s-1"),
        ("initialize", None),
        ("notifications/initialized", "s-2"),
        (message["method"], "s-2"),
    ]
    replayed = d.server.seen[1][3]
    assert replayed["params"] == INITIALIZE["params"] and replayed["id"] != INITIALIZE["id"]
    resent = d.server.seen[3][3]
    if "id" in message:
        assert resent["id"] != message["id"]
        assert {**resent, "id": message["id"]} == message  # only the id changed
    else:
        assert resent == message  # a notification goes as it came: no id added
    tool = message.get("params", {}).get("name")
    assert d.server.executions == Counter({tool: 1} if tool else {})
    record = get_record(response)
    assert record is not None and record.complete
    assert [a.kind for a in record.attempts] == [
        AttemptKind.POST,
        AttemptKind.REINITIALISE,
        AttemptKind.POST,
    ]
    assert reasons(response) == [
        Reason.SESSION_LOST,
        Reason.SESSION_REINITIALISED,
        Reason.SUCCESS,
    ]
    assert [a.session_id for a in record.attempts] == ["s-1", "s-2", "s-2"]
    assert record.session_id == "s-2" and record.post_count == 2
    assert record.http_statuses == (404, 200, 200 if "id" in message else 202)


def _initialize_fails_with(kind: str, library: Any) -> Callable[[dict[str, Any]], Any]:
    def answer(body: dict[str, Any]) -> Any:
        if kind == "500":
            return library.Response(500)
        if kind == "connect":
            raise library.ConnectError("refused")
        result = {"protocolVersion": "2099-01-01" if kind == "version" else VERSION}
        headers = {} if kind == "no-session" else {"mcp-session-id": "s-9"}
        return library.Response(
            200, json={"jsonrpc": "2.0", "id": body["id"], "result": result}, headers=headers
        )

    return answer


@pytest.mark.parametrize("failure", ["500", "connect", "no-session", "version"])
@pytest.mark.parametrize(("library", "shell", "client"), SHELLS)
async def test_a_failed_renewal_hands_the_original_404_on(
    library: Any, shell: Any, client: Any, failure: str
) -> None:
    d = await expired(library, shell, client)
    d.server.initialize = _initialize_fails_with(failure, library)
    response = await d.post(_call("charge"))
    assert response.status_code == 404 and response.json() == NOT_FOUND  # as the server sent it
    assert [s[1] for s in d.server.seen] == ["tools/call", "initialize"]
    assert d.server.executions == Counter()
    record = get_record(response)
    assert record is not None and record.complete
    assert [a.kind for a in record.attempts] == [AttemptKind.POST, AttemptKind.REINITIALISE]
    assert reasons(response) == [Reason.SESSION_LOST, Reason.REINITIALISE_FAILED]
    final = record.classification
    assert final is not None and (final.outcome, final.status) == (Outcome.HTTP_ERROR, 404)
    # The next request tries again (each failed renewal ends only the calls that waited for it).
    d.server.initialize = None
    again = await d.post(_call("charge", 8))
    assert again.status_code == 200


@pytest.mark.parametrize(
    ("gone", "seen", "reasons_after"),
    [
        pytest.param(
            "opened",  # its notifications/initialized gets 404: the renewal failed
            ["initialize", "notifications/initialized"],
            [Reason.REINITIALISE_FAILED],
            id="at-its-handshake",
        ),
        pytest.param(
            "initialized",  # the re-sent request gets 404: handed on, no second renewal
            ["initialize", "notifications/initialized", "tools/call"],
            [Reason.SESSION_REINITIALISED, Reason.NOT_RETRYABLE],
            id="at-the-resend",
        ),
    ],
)
@pytest.mark.parametrize(("library", "shell", "client"), SHELLS)
async def test_a_404_in_the_renewed_session_is_handed_on(
    library: Any,
    shell: Any,
    client: Any,
    *,
    gone: str,
    seen: list[str],
    reasons_after: list[Reason],
) -> None:
    d = await expired(library, shell, client)
    d.server.expire_new = gone
    response = await d.post(_call("lookup"))
    assert response.status_code == 404
    assert [s[1] for s in d.server.seen] == ["tools/call", *seen]
    assert [s[2] for s in d.server.seen[2:]] == ["s-2"] * (len(seen) - 1)
    assert reasons(response) == [Reason.SESSION_LOST, *reasons_after]


@pytest.mark.parametrize(("library", "shell", "client"), SHELLS)
async def test_concurrent_404s_share_one_renewal(library: Any, shell: Any, client: Any) -> None:
    d = await expired(library, shell, client)
    d.server.hold(4)  # the four 404s are answered only once all four requests arrived
    responses: list[Any] = []

    async def one(n: int) -> None:
        message = _call("charge", n)  # four different charges: identical ones would be held
        message["params"]["arguments"] = {"key": f"a{n}"}
        responses.append(await d.post(message))

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tasks:
            for n in range(4):
                tasks.start_soon(one, n)
    assert sorted(r.json()["id"] for r in responses) == [0, 1, 2, 3]
    assert all(r.status_code == 200 for r in responses)
    assert len(d.server.sent("initialize")) == 1  # one renewal for the four
    assert [s[2] for s in d.server.sent("tools/call")] == ["s-1"] * 4 + ["s-2"] * 4
    assert d.server.executions == Counter({"charge": 4})
    renewed = [Reason.SESSION_LOST, Reason.SESSION_REINITIALISED, Reason.SUCCESS]
    reused = [Reason.SESSION_LOST, Reason.SUCCESS]  # another call's renewal
    assert sorted(reasons(r) for r in responses) == sorted([renewed, reused, reused, reused])


@pytest.mark.parametrize(("library", "shell", "client"), SHELLS)
async def test_later_requests_go_out_in_the_new_session(
    library: Any, shell: Any, client: Any
) -> None:
    d = await expired(library, shell, client)
    await d.post(_call("lookup"))
    d.server.seen.clear()
    # The client still holds s-1: every request it sends is rewritten to s-2.
    assert (await d.post(_call("lookup", 8))).status_code == 200
    assert (await d.request("GET", session="s-1")).status_code == 405  # our server has no stream
    assert (await d.request("DELETE", session="s-1")).status_code == 200
    assert [(s[0], s[2]) for s in d.server.seen] == [
        ("POST", "s-2"),
        ("GET", "s-2"),
        ("DELETE", "s-2"),
    ]
    assert len(d.server.sent("initialize")) == 0


@pytest.mark.parametrize(("library", "shell", "client"), SHELLS)
async def test_without_an_initialize_seen_the_404_is_handed_on(
    library: Any, shell: Any, client: Any
) -> None:
    d = Driver(library, shell, client)  # the client's handshake went past this transport
    response = await d.post(_call("lookup"))
    assert response.status_code == 404
    assert [s[1] for s in d.server.seen] == ["tools/call"]
    assert reasons(response) == [Reason.NOT_RETRYABLE]


@pytest.mark.parametrize(("library", "shell", "client"), SHELLS)
async def test_a_404_without_a_session_is_handed_on(library: Any, shell: Any, client: Any) -> None:
    """2026-07-28 has no sessions: a 404 to a request without Mcp-Session-Id is an answer."""
    d = Driver(library, shell, client)
    await d.start()
    d.server.unknown.add("tools/call")
    response = await d.post(_call("lookup"), session=None)
    assert response.status_code == 404
    assert [s[1] for s in d.server.seen] == ["tools/call"]
    assert reasons(response) == [Reason.NOT_RETRYABLE]


@pytest.mark.parametrize(("library", "shell", "client"), SHELLS)
async def test_each_session_is_renewed_with_the_initialize_that_opened_it(
    library: Any, shell: Any, client: Any
) -> None:
    d = Driver(library, shell, client)
    await d.start()  # s-1, opened by INITIALIZE
    other = {**INITIALIZE, "params": {**INITIALIZE["params"], "clientInfo": {"name": "other"}}}
    opened = await d.post(other, session=None)
    assert opened.headers["mcp-session-id"] == "s-2"
    d.server.live.clear()  # the server forgets both
    d.server.seen.clear()
    assert (await d.post(_call("lookup", 1), session="s-2")).status_code == 200
    assert (await d.post(_call("lookup", 2), session="s-1")).status_code == 200
    replayed = [s[3]["params"]["clientInfo"]["name"] for s in d.server.sent("initialize")]
    assert replayed == ["other", "tester"]


@pytest.mark.parametrize(
    "renewed",
    [pytest.param(True, id="renewed"), pytest.param(False, id="renewal-fails")],
)
@pytest.mark.parametrize(("library", "shell", "client"), SHELLS)
async def test_a_stream_cut_as_its_session_ends_is_reissued_in_a_new_one(
    library: Any, shell: Any, client: Any, renewed: bool
) -> None:
    d = Driver(library, shell, client, contain_failures=True)
    await d.start()
    d.server.cut_and_forget = True  # the READ call's stream breaks, its session is gone
    if not renewed:
        d.server.initialize = _initialize_fails_with("500", library)
    response = await d.post(_call("lookup"))
    assert response.status_code == 200  # the SSE answer was handed on before it broke
    last = json.loads(response.text.split("data: ")[-1])
    assert last["id"] == 7 and ("result" in last) is renewed
    seen = [(s[1], s[2]) for s in d.server.seen]
    assert seen[:3] == [("tools/call", "s-1"), ("tools/call", "s-1"), ("initialize", None)]
    expected = [Reason.STREAM_INCOMPLETE, Reason.SESSION_LOST]
    if renewed:
        assert seen[3:] == [("notifications/initialized", "s-2"), ("tools/call", "s-2")]
        expected += [Reason.SESSION_REINITIALISED, Reason.SUCCESS]
    else:  # the stream ends with the contained failure: the 404
        assert len(seen) == 3 and last["error"]["data"]["outcome"] == "HTTP_ERROR"
        expected += [Reason.REINITIALISE_FAILED]
    assert reasons(response) == expected


@pytest.mark.parametrize(("library", "shell", "client"), SHELLS)
async def test_a_charge_that_may_have_run_holds_its_resend_in_the_renewed_session(
    library: Any, shell: Any, client: Any
) -> None:
    """The duplicate guard matches server, tool and arguments, not the session: the client's
    re-send, carrying the session the server forgot, goes out in the renewed one, and is the
    same charge."""
    d = Driver(library, shell, client)
    await d.start()
    d.server.cut_and_forget = True  # the charge runs, its answer breaks, the session is gone
    cut = await d.post(_call("charge", 1))
    cut_record = get_record(cut)
    assert cut_record is not None and cut_record.outcome == Outcome.STREAM_INCOMPLETE
    renewed = await d.post(_call("lookup", 2))  # a 404: renewed to s-2, re-sent
    assert reasons(renewed)[:2] == [Reason.SESSION_LOST, Reason.SESSION_REINITIALISED]
    with pytest.raises(mcp_safe_retry.DuplicateCallError) as held:  # either flavour
        await d.post(_call("charge", 3))  # the client still names s-1
    record = get_record(held.value)
    assert record is not None and record.outcome == Outcome.DUPLICATE_HELD
    assert record.post_count == 0 and record.session_id == "s-2"
    assert record.duplicate_of is not None
    assert record.duplicate_of.earlier.session_id == "s-1"
    assert d.server.executions["charge"] == 1
    names = [(s[3]["params"]["name"], s[2]) for s in d.server.sent("tools/call")]
    assert names == [("charge", "s-1"), ("lookup", "s-1"), ("lookup", "s-2")]
