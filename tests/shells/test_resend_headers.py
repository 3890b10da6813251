"""A re-sent request keeps the 2026-07-28 routing headers right.

Clients on 2026-07-28 send `Mcp-Method` and `Mcp-Name` (and `MCP-Protocol-Version`) and
servers reject a request whose headers disagree with its body (-32020). A re-send rewrites
only the JSON-RPC id, so every header but the body's length must stay as the caller sent
it, and the body's method and name must still match them.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import httpx2
import pytest

import mcp_safe_retry
import mcp_safe_retry.httpx2
from mcp_safe_retry import Idempotency, RetryPolicy

pytestmark = pytest.mark.anyio
URL = "http://mcp.test/mcp"
READ = RetryPolicy(tools={"lookup": Idempotency.READ}, initial_backoff=0.0)
HEADERS = {
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "lookup",
    "mcp-param-region": "eu",
    "accept": "application/json, text/event-stream",
}
BODY = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {"name": "lookup", "arguments": {"key": "a"}},
}
SHELLS = [
    pytest.param(httpx, mcp_safe_retry.AsyncRetryTransport, httpx.AsyncClient, id="httpx-async"),
    pytest.param(httpx, mcp_safe_retry.RetryTransport, httpx.Client, id="httpx-sync"),
    pytest.param(
        httpx2,
        mcp_safe_retry.httpx2.AsyncRetryTransport,
        httpx2.AsyncClient,
        id="httpx2-async",
    ),
    pytest.param(httpx2, mcp_safe_retry.httpx2.RetryTransport, httpx2.Client, id="httpx2-sync"),
]


def _result(request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": {"content": []}}


def _server(library: Any, first: str, seen: list[Any]) -> Any:
    """A server that checks the routing headers against the body as 2026-07-28 servers do,
    fails the first request in the way ``first`` says, and answers the rest."""

    def handle(request: Any) -> Any:
        body = json.loads(request.content)
        seen.append((request.headers, body))
        params = body.get("params", {})
        if request.headers.get("mcp-method") != body["method"] or request.headers.get(
            "mcp-name"
        ) != params.get("name"):
            error = {"code": -32020, "message": "header mismatch"}
            return library.Response(400, json={"jsonrpc": "2.0", "id": None, "error": error})
        if len(seen) == 1 and first == "503":
            return library.Response(503)
        if len(seen) == 1 and first == "connect":
            raise library.ConnectError("refused")
        if len(seen) == 1 and first == "cut-stream":
            # An SSE answer that ends before the response: the READ call is re-issued.
            return library.Response(
                200, headers={"content-type": "text/event-stream"}, content=b": hello\n\n"
            )
        return library.Response(200, json=_result(body["id"]))

    return library.MockTransport(handle)


@pytest.mark.parametrize("first", ["503", "connect", "cut-stream"])
@pytest.mark.parametrize(("library", "shell", "client"), SHELLS)
async def test_a_resend_keeps_every_header_and_changes_only_the_id(
    library: Any, shell: Any, client: Any, first: str
) -> None:
    seen: list[Any] = []
    transport = shell(_server(library, first, seen), policy=READ, sleep=_no_sleep(shell))
    http = client(transport=transport)
    if isinstance(http, httpx.AsyncClient | httpx2.AsyncClient):
        async with http:
            response = await http.post(URL, json=BODY, headers=HEADERS)
            await response.aread()
    else:
        with http:
            response = http.post(URL, json=BODY, headers=HEADERS)
    assert response.status_code == 200 and _answer(response)["id"] == 7
    assert len(seen) == 2
    (first_headers, first_body), (again_headers, again_body) = seen
    assert again_body["id"] != first_body["id"] == 7
    assert {**again_body, "id": 7} == first_body  # only the id was rewritten
    ignored = {"content-length"}
    assert [(k, v) for k, v in again_headers.multi_items() if k not in ignored] == [
        (k, v) for k, v in first_headers.multi_items() if k not in ignored
    ]
    assert again_headers["mcp-method"] == again_body["method"]
    assert again_headers["mcp-name"] == again_body["params"]["name"]
    record = transport.history.last()
    assert record is not None and record.post_count == 2


def _answer(response: Any) -> Any:
    """The JSON-RPC answer in a JSON body or in an SSE stream's last event."""
    if response.headers["content-type"].startswith("text/event-stream"):
        return json.loads(response.text.split("data: ")[-1])
    return response.json()


def _no_sleep(shell: Any) -> Any:
    if "Async" in shell.__name__:

        async def asleep(_: float) -> None:
            return None

        return asleep
    return lambda _: None
