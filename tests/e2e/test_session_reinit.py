"""A session the server dropped between two calls (2025 era), with the official mcp 2.x client.

The spec: a server that ended a session answers 404 to requests carrying its
`Mcp-Session-Id`, and the client MUST start a new session with `initialize`. The official
client does not; the transport re-initialises once and re-sends the request in the new
session (issue 13, section 2), so the call succeeds and the tool runs exactly once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_safe_retry import History, Idempotency, RetryPolicy
from mcp_safe_retry.core.attempt_kinds import AttemptKind
from mcp_safe_retry.httpx2 import mcp_client
from mcp_safe_retry.kitchen import KitchenServer
from mcp_safe_retry.records import Reason

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
CALLS = [
    pytest.param("lookup", {"key": "a"}, id="read"),
    pytest.param("charge", {"key": "c", "amount": 1}, id="unsafe"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the official client is asyncio-based


@pytest.fixture(scope="module")
def kitchen() -> Iterator[KitchenServer]:
    with KitchenServer(legacy_only=True) as server:  # sessions: the 2025 era
        yield server


@pytest.mark.parametrize(
    "listed",
    [
        pytest.param(True, id="listed-first"),  # the 404 meets the tools/call itself
        pytest.param(False, id="client-lists"),  # the client's own tools/list meets it
    ],
)
@pytest.mark.parametrize(("tool", "arguments"), CALLS)
async def test_a_dropped_session_is_reinitialised_and_the_call_runs_once(
    kitchen: KitchenServer, tool: str, arguments: dict[str, Any], listed: bool
) -> None:
    history = History()
    policy = RetryPolicy(tools={"lookup": Idempotency.READ})
    url = kitchen.url_for("session_dropped", {"afterCalls": 1})
    http = mcp_client(policy=policy, history=history)
    outcomes: list[Any] = []
    with anyio.fail_after(20):
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            if listed:
                await client.list_tools()
            for _ in range(3):  # the server drops the session after the first call
                try:
                    outcomes.append(await client.call_tool(tool, arguments))
                except MCPError as exc:
                    outcomes.append(exc)
    assert not any(isinstance(o, MCPError) or o.is_error for o in outcomes), outcomes
    state = kitchen.state_of(url)
    assert state.executions == {tool: 3}  # each call ran exactly once
    assert [p.method for p in state.posts].count("initialize") == 2  # one re-initialise
    (renewed,) = [
        r for r in history.records() if any(a.kind == AttemptKind.REINITIALISE for a in r.attempts)
    ]
    if listed:
        assert (renewed.method, renewed.tool) == ("tools/call", tool)
    assert [a.kind for a in renewed.attempts] == [
        AttemptKind.POST,
        AttemptKind.REINITIALISE,
        AttemptKind.POST,
    ]
    assert [a.decision.reason for a in renewed.attempts if a.decision] == [
        Reason.SESSION_LOST,
        Reason.SESSION_REINITIALISED,
        Reason.SUCCESS,
    ]
    assert renewed.http_statuses == (404, 200, 200)
    assert renewed.post_count == 2 and renewed.classification is not None
    assert renewed.classification.ok
    old, opened, again = (a.session_id for a in renewed.attempts)
    assert old is not None and opened is not None and old != opened == again
    assert renewed.session_id == opened
    later = [r for r in history.records() if r.started_at > renewed.started_at]
    assert later and all(r.session_id == opened for r in later)  # rewritten to the new session
