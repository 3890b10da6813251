"""The official mcp 1.x client (httpx) through `mcp_safe_retry.mcp_client` against the kitchen.

mcp 1.x and 2.x cannot share an environment: scripts/test.sh runs this file in a second
virtual environment with ``mcp==1.30.0`` and starts the kitchen (which needs mcp 2.x) as a
subprocess of the first one, named by ``MCP_SAFE_RETRY_KITCHEN_PYTHON``.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client, streamablehttp_client
from mcp.shared.exceptions import McpError

from mcp_safe_retry import History, Idempotency, RetryBudget, RetryPolicy, mcp_client
from mcp_safe_retry.core.outcomes import verdict
from mcp_safe_retry.core.session_lost import session_lost
from mcp_safe_retry.records import CONTAINED_ERROR_CODE, Outcome, Reason, RetryOrigin
from tests.kitchen_process import Kitchen, kitchen_process

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
POLICY = RetryPolicy(tools={"lookup": Idempotency.READ})


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def kitchen() -> Iterator[Kitchen]:
    with kitchen_process() as served:
        yield served


async def call(url: str, tool: str, arguments: dict[str, Any], history: History) -> Any:
    """One session: initialize, call the tool, then call lookup again on the same session."""
    with anyio.fail_after(20):
        async with (
            mcp_client(policy=POLICY, history=history) as http,
            streamable_http_client(url, http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            try:
                result: Any = await session.call_tool(tool, arguments)
            except McpError as exc:
                result = exc
            after = await session.call_tool("lookup", {"key": "after"})
            assert not after.isError  # the session survived whatever happened
            return result


def tool_records(history: History, tool: str) -> list[Any]:
    return [r for r in history.records() if r.method == "tools/call" and r.tool == tool]


async def test_baseline(kitchen: Kitchen) -> None:
    history = History()
    result = await call(kitchen.url_for("baseline"), "charge", {"key": "k1", "amount": 3}, history)
    assert not result.isError
    (record,) = tool_records(history, "charge")
    assert record.classification.outcome is Outcome.TOOL_SUCCESS
    assert record.client is not None and record.client.startswith("mcp")
    assert record.protocol_version == "2025-11-25"
    assert kitchen.state()["executions"] == {"charge": 1, "lookup": 1}


async def test_read_tool_is_retried_after_503(kitchen: Kitchen) -> None:
    history = History()
    url = kitchen.url_for("errors.http_status_sequence", {"statusCodes": [200, 200, 503, 200]})
    result = await call(url, "lookup", {"key": "k"}, history)
    assert not result.isError
    first = tool_records(history, "lookup")[0]
    assert first.http_statuses == (503, 200)
    assert [a.retry_origin for a in first.attempts] == [RetryOrigin.NONE, RetryOrigin.SDK]


async def test_unsafe_tool_is_never_resent(kitchen: Kitchen) -> None:
    history = History()
    url = kitchen.url_for("connection_abort", {"when": "after", "tool": "charge"})
    result = await call(url, "charge", {"key": "k2", "amount": 9}, history)
    assert isinstance(result, McpError) and result.error.code == CONTAINED_ERROR_CODE
    (record,) = tool_records(history, "charge")
    assert record.classification.outcome is Outcome.NETWORK_ERROR
    assert kitchen.posts("charge") == 1
    assert kitchen.state()["executionsByKey"]["charge"] == {"k2": 1}


async def test_cut_stream_of_a_read_is_spliced(kitchen: Kitchen) -> None:
    history = History()
    url = kitchen.url_for("sse_truncated", {"when": "after", "tool": "lookup", "events": 2})
    result = await call(url, "lookup", {"key": "k"}, history)
    assert not result.isError
    first = tool_records(history, "lookup")[0]
    assert [a.classification.outcome for a in first.attempts] == [
        Outcome.STREAM_INCOMPLETE,
        Outcome.TOOL_SUCCESS,
    ]


async def test_tool_error_is_reported_not_retried(kitchen: Kitchen) -> None:
    history = History()
    url = kitchen.url_for("errors.tool_error", {"tool": "lookup"})
    result = await call(url, "lookup", {"key": "k"}, history)
    assert result.isError
    first = tool_records(history, "lookup")[0]
    assert first.classification.outcome is Outcome.TOOL_ERROR and first.post_count == 1


async def _calls_across_a_dropped_session(
    kitchen: Kitchen, tool: str, http: httpx.AsyncClient
) -> list[Any]:
    """Three calls on one session; the kitchen's server drops the session after the first."""
    url = kitchen.url_for("session_dropped", {"afterCalls": 1})
    outcomes: list[Any] = []
    with anyio.fail_after(20):
        async with (
            http,
            streamable_http_client(url, http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.list_tools()  # else call_tool lists them itself, after the drop
            for n in range(3):
                try:
                    outcomes.append(await session.call_tool(tool, {"key": f"k{n}", "amount": 1}))
                except McpError as exc:
                    outcomes.append(exc)
    return outcomes


async def test_mcp1_reports_a_dropped_session_as_plus_32600_and_we_recognise_it(
    kitchen: Kitchen,
) -> None:
    # Without our transport underneath, the client meets the 404 itself.
    outcomes = await _calls_across_a_dropped_session(kitchen, "lookup", httpx.AsyncClient())
    assert not isinstance(outcomes[0], McpError), outcomes[0]
    error = outcomes[1]
    assert isinstance(error, McpError)
    assert (error.error.code, error.error.message) == (32600, "Session terminated")
    seen = verdict(Outcome.JSONRPC_ERROR, code=error.error.code, message=error.error.message)
    assert session_lost(seen)


@pytest.mark.parametrize("tool", ["lookup", "charge"])
async def test_a_dropped_session_is_reinitialised_and_the_call_runs_once(
    kitchen: Kitchen, tool: str
) -> None:
    history = History()
    http = mcp_client(policy=POLICY, history=history)
    outcomes = await _calls_across_a_dropped_session(kitchen, tool, http)
    assert not any(isinstance(o, McpError) or o.isError for o in outcomes), outcomes
    assert kitchen.state()["executions"] == {tool: 3}  # each call ran exactly once
    assert [p["method"] for p in kitchen.state()["posts"]].count("initialize") == 2
    second = tool_records(history, tool)[1]  # the call that met the 404
    assert [a.kind for a in second.attempts] == ["post", "reinitialise", "post"]
    assert [a.decision.reason for a in second.attempts if a.decision] == [
        Reason.SESSION_LOST,
        Reason.SESSION_REINITIALISED,
        Reason.SUCCESS,
    ]
    assert second.http_statuses == (404, 200, 200) and second.post_count == 2
    third = tool_records(history, tool)[2]
    assert third.post_count == 1 and third.session_id == second.session_id


@pytest.mark.filterwarnings("ignore:Use `streamable_http_client` instead:DeprecationWarning")
async def test_parameters_deep_copied_as_smolagents_does_still_feed_the_users_history(
    kitchen: Kitchen,
) -> None:
    # smolagents' mcpadapt deep-copies its server parameters, the factory included, then
    # opens the session with them through the SDK's keyword API.
    history, budget = History(), RetryBudget(burst=5)
    url = kitchen.url_for(
        "errors.http_status_sequence", {"statusCodes": [503, 200], "method": "tools/call"}
    )
    parameters = copy.deepcopy(
        {
            "url": url,
            "httpx_client_factory": functools.partial(
                mcp_client, policy=POLICY, history=history, budget=budget
            ),
        }
    )
    with anyio.fail_after(20):
        async with (
            streamablehttp_client(**parameters) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            looked_up = await session.call_tool("lookup", {"key": "k"})
    assert not looked_up.isError
    (lookup,) = tool_records(history, "lookup")
    assert lookup.http_statuses == (503, 200)
    assert kitchen.state()["executions"] == {"lookup": 1}
    assert budget.tokens < 5  # the retry was paid from the user's budget


async def test_the_resend_of_a_charge_that_ran_is_held(kitchen: Kitchen) -> None:
    """The duplicate guard with mcp 1.x: the application calls the dropped charge again on
    the same session; it is not sent (contained: the session carries on)."""
    history = History()
    url = kitchen.url_for("connection_abort", {"when": "after", "tool": "charge"})
    with anyio.fail_after(20):
        async with (
            mcp_client(policy=POLICY, history=history) as http,
            streamable_http_client(url, http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            errors = []
            for _ in range(2):
                with pytest.raises(McpError) as raised:
                    await session.call_tool("charge", {"key": "k3", "amount": 9})
                errors.append(raised.value.error)
            assert not (await session.call_tool("lookup", {"key": "after"})).isError
    assert [e.code for e in errors] == [CONTAINED_ERROR_CODE, CONTAINED_ERROR_CODE]
    assert [e.data["outcome"] for e in errors] == ["NETWORK_ERROR", "DUPLICATE_HELD"]
    assert errors[1].data["duplicateOf"]["delivery"] == "may_have_run"
    assert kitchen.posts("charge") == 1
    assert kitchen.state()["executionsByKey"]["charge"] == {"k3": 1}
    first, second = tool_records(history, "charge")
    assert [a.to_dict()["delivery"] for a in first.attempts] == ["may_have_run"]
    assert [a.to_dict()["delivery"] for a in second.attempts] == ["not_sent"]
    assert second.retry_origin is RetryOrigin.APPLICATION and second.post_count == 0


# -- a final HTTP error: mcp 1.x calls raise_for_status() and would end its session ---------


async def test_a_final_503_on_an_unsafe_tool_leaves_the_session_usable(kitchen: Kitchen) -> None:
    history = History()
    url = kitchen.url_for("errors.http_status_sequence", {"statusCodes": [503], "tool": "charge"})
    result = await call(url, "charge", {"key": "k5", "amount": 1}, history)  # then lookup
    assert isinstance(result, McpError) and result.error.code == CONTAINED_ERROR_CODE
    assert result.error.data["source"] == "mcp-safe-retry" and result.error.data["local"]
    (record,) = tool_records(history, "charge")
    assert record.http_statuses == (503,)  # the record keeps the real status; never re-sent
    assert record.classification.outcome is Outcome.HTTP_ERROR
    assert kitchen.posts("charge") == 1 and kitchen.state()["executions"] == {"lookup": 1}


async def test_bare_mcp1_ends_its_session_on_that_503(kitchen: Kitchen) -> None:
    # What the containment saves it from: the same answer without our transport.
    url = kitchen.url_for("errors.http_status_sequence", {"statusCodes": [503], "tool": "charge"})
    with pytest.raises(BaseExceptionGroup) as raised, anyio.fail_after(20):  # noqa: PT012
        async with (
            httpx.AsyncClient() as http,
            streamable_http_client(url, http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.call_tool("charge", {"key": "k6", "amount": 1})
    assert raised.group_contains(httpx.HTTPStatusError)


def test_it_has_the_settings_of_mcp1s_factory() -> None:
    from mcp.shared._httpx_utils import create_mcp_http_client

    ours, sdk = mcp_client(), create_mcp_http_client()
    for setting in ("timeout", "follow_redirects", "max_redirects", "trust_env", "headers"):
        assert getattr(ours, setting) == getattr(sdk, setting), setting
