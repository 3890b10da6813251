"""A final HTTP error under `contain_failures`: answered for mcp 1.x (httpx), handed on for 2.x.

mcp 1.x calls `raise_for_status()` on every POST answer, so any non-2xx answer ends its
session; mcp 2.x turns the same answer into a JSON-RPC error for that request by itself. So
the httpx shells answer a final HTTP error to a request as a JSON-RPC error (the server's own
if its body holds one, else a contained -32010) and the httpx2 shells hand it on. What a
layer above handles itself is handed on in both: redirects, 401/403 (auth flows), 404 (the
SDKs' own "session terminated"), a notification's answer, GET and DELETE.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import httpx2
import pytest

import mcp_safe_retry
import mcp_safe_retry.httpx2
from mcp_safe_retry import History, get_record
from mcp_safe_retry.records import CONTAINED_ERROR_CODE, Outcome, Reason
from tests.helpers import rpc, tool_call

pytestmark = pytest.mark.anyio
URL = "http://mcp.test/mcp"

# (HTTP library, its async retry transport, whether it contains HTTP errors)
FLAVOURS = [
    pytest.param(httpx, mcp_safe_retry.AsyncRetryTransport, True, id="httpx-mcp1"),
    pytest.param(httpx2, mcp_safe_retry.httpx2.AsyncRetryTransport, False, id="httpx2-mcp2"),
]


def answering(library: Any, status: int, posts: list[Any], **response: Any) -> Any:
    def handler(request: Any) -> Any:
        posts.append((request.method, request.content))
        return library.Response(status, **response)

    return library.MockTransport(handler)


async def send(
    library: Any, shell: Any, status: int, body: Any, *, method: str = "POST", **response: Any
) -> tuple[Any, list[Any], History]:
    posts: list[Any] = []
    history = History()
    transport = shell(
        answering(library, status, posts, **response), history=history, contain_failures=True
    )
    async with library.AsyncClient(transport=transport) as client:
        if method == "POST":
            answer = await client.post(URL, json=body)
        else:
            answer = await client.request(method, URL, headers={"mcp-session-id": "s1"})
    return answer, posts, history


@pytest.mark.parametrize(("library", "shell", "contains"), FLAVOURS)
@pytest.mark.parametrize("status", [400, 405, 407, 413, 429, 500, 502, 503])
async def test_a_final_http_error_to_an_unsafe_call(
    library: Any, shell: Any, contains: bool, status: int
) -> None:
    answer, posts, history = await send(library, shell, status, tool_call("charge", id=7))
    assert len(posts) == 1  # UNSAFE: never re-sent, whatever the flavour
    (record,) = history.records()
    assert record.http_statuses == (status,)  # the record keeps the real status
    assert record.classification.outcome is Outcome.HTTP_ERROR
    if not contains:
        assert answer.status_code == status  # mcp 2.x answers it for the request itself
        return
    assert answer.status_code == 200
    error = answer.json()["error"]
    assert answer.json()["id"] == 7
    assert error["code"] == CONTAINED_ERROR_CODE
    assert error["data"]["source"] == "mcp-safe-retry" and error["data"]["local"] is True
    assert error["data"]["outcome"] == "HTTP_ERROR"
    assert error["data"]["attempts"][0]["httpStatus"] == status
    assert f"HTTP {status}" in error["message"]
    assert get_record(answer) == record


@pytest.mark.parametrize(("library", "shell", "contains"), FLAVOURS)
async def test_the_servers_own_jsonrpc_error_in_a_non_2xx_body_is_what_mcp1_gets(
    library: Any, shell: Any, contains: bool
) -> None:
    # id null: the server refused the request before reading its id (mcp 2.x re-addresses
    # such an error to the request, and so does the httpx flavour).
    error = {"code": -32602, "message": "Unknown tool: charge", "data": {"why": 1}}
    body = {"jsonrpc": "2.0", "id": None, "error": error}
    answer, _, history = await send(library, shell, 400, tool_call("charge", id=3), json=body)
    (record,) = history.records()
    assert record.http_statuses == (400,)
    assert record.classification.code == -32602
    if contains:
        assert answer.status_code == 200
        assert answer.json() == {"jsonrpc": "2.0", "id": 3, "error": error}
    else:
        assert answer.status_code == 400 and answer.json() == body


@pytest.mark.parametrize(("library", "shell", "contains"), FLAVOURS)
async def test_a_retried_read_contains_only_its_final_answer(
    library: Any, shell: Any, contains: bool
) -> None:
    policy = mcp_safe_retry.RetryPolicy(
        tools={"lookup": mcp_safe_retry.Idempotency.READ}, max_retries=1, initial_backoff=0
    )
    posts: list[Any] = []
    history = History()
    transport = shell(
        answering(library, 503, posts), policy=policy, history=history, contain_failures=True
    )
    async with library.AsyncClient(transport=transport) as client:
        answer = await client.post(URL, json=tool_call("lookup", id=1))
    assert len(posts) == 2
    (record,) = history.records()
    assert record.http_statuses == (503, 503)
    assert answer.status_code == (200 if contains else 503)
    if contains:
        reasons = [a["reason"] for a in answer.json()["error"]["data"]["attempts"]]
        assert reasons[-1] == str(Reason.MAX_RETRIES)


HANDED_ON = [
    pytest.param(307, {"headers": {"location": "/mcp/"}}, id="307-redirect"),
    pytest.param(308, {"headers": {"location": "/mcp/"}}, id="308-redirect"),
    pytest.param(301, {"headers": {"location": "/elsewhere"}}, id="301-redirect"),
    pytest.param(401, {"headers": {"www-authenticate": "Bearer"}}, id="401-auth-flow"),
    pytest.param(403, {"headers": {"www-authenticate": "Bearer scope=x"}}, id="403-step-up"),
    pytest.param(
        404,
        {
            "json": {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32600, "message": "Session not found"},
            }
        },
        id="404-session",
    ),
]


@pytest.mark.parametrize(("library", "shell", "contains"), FLAVOURS)
@pytest.mark.parametrize(("status", "response"), HANDED_ON)
async def test_what_a_layer_above_handles_is_handed_on(
    library: Any, shell: Any, contains: bool, status: int, response: dict[str, Any]
) -> None:
    answer, posts, history = await send(
        library, shell, status, tool_call("charge", id=2), **response
    )
    assert answer.status_code == status and len(posts) == 1
    assert history.records()[0].http_statuses == (status,)


@pytest.mark.parametrize(("library", "shell", "contains"), FLAVOURS)
async def test_a_notifications_answer_is_handed_on(
    library: Any, shell: Any, contains: bool
) -> None:
    answer, _, _ = await send(library, shell, 503, rpc("notifications/initialized", id=None))
    assert answer.status_code == 503  # no id to answer: nothing could stand for it


@pytest.mark.parametrize(("library", "shell", "contains"), FLAVOURS)
@pytest.mark.parametrize("method", ["GET", "DELETE"])
async def test_requests_that_carry_no_jsonrpc_message_pass_through(
    library: Any, shell: Any, contains: bool, method: str
) -> None:
    answer, posts, history = await send(library, shell, 503, None, method=method)
    assert answer.status_code == 503 and [p[0] for p in posts] == [method]
    assert history.records() == []


@pytest.mark.parametrize(("library", "shell", "contains"), FLAVOURS)
async def test_without_containment_every_http_error_is_handed_on(
    library: Any, shell: Any, contains: bool
) -> None:
    posts: list[Any] = []
    transport = shell(answering(library, 503, posts))
    async with library.AsyncClient(transport=transport) as client:
        answer = await client.post(URL, json=tool_call("charge", id=1))
    assert answer.status_code == 503


@pytest.mark.parametrize(("library", "shell", "contains"), FLAVOURS)
async def test_mcp_client_contains_by_flavour(library: Any, shell: Any, contains: bool) -> None:
    factory = mcp_safe_retry.mcp_client if library is httpx else mcp_safe_retry.httpx2.mcp_client
    posts: list[Any] = []
    async with factory(transport=answering(library, 502, posts)) as client:
        answer = await client.post(URL, json=tool_call("charge", id=9))
    assert answer.status_code == (200 if contains else 502)
    if contains:
        assert json.loads(answer.content)["error"]["code"] == CONTAINED_ERROR_CODE


def refreshing_auth(library: Any) -> Any:
    """An auth flow that answers a 401 by refreshing its token and re-sending (as the SDK's
    OAuth provider does, above the transport)."""

    class Refreshing(library.Auth):  # type: ignore[misc, name-defined]
        token = "stale"

        def auth_flow(self, request: Any) -> Any:
            request.headers["authorization"] = f"Bearer {self.token}"
            response = yield request
            if response.status_code == 401:
                self.token = "fresh"
                request.headers["authorization"] = f"Bearer {self.token}"
                yield request

    return Refreshing()


@pytest.mark.parametrize(("library", "shell", "contains"), FLAVOURS)
async def test_an_auth_flow_above_sees_the_401_and_recovers(
    library: Any, shell: Any, contains: bool
) -> None:
    factory = mcp_safe_retry.mcp_client if library is httpx else mcp_safe_retry.httpx2.mcp_client
    seen: list[str] = []

    def answer(request: Any) -> Any:
        seen.append(request.headers["authorization"])
        if request.headers["authorization"] != "Bearer fresh":
            return library.Response(401, headers={"www-authenticate": "Bearer"})
        body = json.loads(request.content)
        return library.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": {}})

    history = History()
    async with factory(
        transport=library.MockTransport(answer), auth=refreshing_auth(library), history=history
    ) as c:
        response = await c.post(URL, json=tool_call("charge", id=4))
    assert response.status_code == 200 and response.json()["id"] == 4
    assert seen == ["Bearer stale", "Bearer fresh"]
    assert [r.http_statuses for r in history.records()] == [(401,), (200,)]
