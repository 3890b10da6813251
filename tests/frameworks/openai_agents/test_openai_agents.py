"""openai-agents 0.24.0 (mcp 2.x) through README's snippet, against the kitchen.

The agent's own tool objects (`MCPUtil.to_function_tool`, what an `Agent` hands the model)
are invoked as the runner invokes them, without a model.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from agents.mcp import MCPServerStreamableHttp, MCPUtil
from agents.tool import FunctionTool
from agents.tool_context import ToolContext

from tests.frameworks import checks, readme
from tests.kitchen_process import Kitchen

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


async def function_tools(server: MCPServerStreamableHttp) -> dict[str, FunctionTool]:
    """The server's tools as the agent sees them."""
    listed = await server.list_tools()
    return {t.name: MCPUtil.to_function_tool(t, server, False) for t in listed}


async def invoke(tool: FunctionTool, arguments: dict[str, Any]) -> Any:
    """Invoke `tool` as the runner does for a model's tool call."""
    text = json.dumps(arguments)
    context = ToolContext(
        context=None, tool_name=tool.name, tool_call_id="call-1", tool_arguments=text
    )
    return await tool.on_invoke_tool(context, text)


async def test_read_retried_unsafe_sent_once_records_in_history(kitchen: Kitchen) -> None:
    names = readme.setup(kitchen.url_for(checks.SCENARIO, checks.PARAMS))
    names["MCPServerStreamableHttp"] = MCPServerStreamableHttp
    with anyio.fail_after(checks.TIMEOUT):
        async with readme.build("openai-agents", names) as server:
            tools = await function_tools(server)
            looked_up = await invoke(tools["lookup"], checks.LOOKUP)
            charged = await invoke(tools["charge"], checks.CHARGE)
    assert json.loads(looked_up["text"])["key"] == "a"
    # The framework's default failure_error_function turns the error into this model-visible text.
    assert charged == "An error occurred while running the tool. Please try again."
    checks.assert_read_retried_once_run(kitchen, names["history"])
    checks.assert_unsafe_sent_once_never_run(kitchen, names["history"])


async def test_framework_retry_of_a_call_that_may_have_run_is_held(kitchen: Kitchen) -> None:
    """`max_retry_attempts=1` calls charge again after the drop; the guard holds it (issue 18)."""
    names = readme.setup(kitchen.url_for(*checks.ABORT_AFTER))
    server = MCPServerStreamableHttp(
        params={"url": names["URL"], "httpx_client_factory": names["factory"]},
        max_retry_attempts=1,
        retry_backoff_seconds_base=0.01,
    )
    with anyio.fail_after(checks.TIMEOUT):
        async with server:
            listed = {t.name: t for t in await server.list_tools()}
            # failure_error_function=None: the runner raises the error instead of wording it.
            charge = MCPUtil.to_function_tool(
                listed["charge"], server, False, failure_error_function=None
            )
            error = await checks.raised(invoke(charge, checks.CHARGE))
    checks.assert_recall_held(kitchen, names["history"])
    assert checks.contained_outcome(error) == "DUPLICATE_HELD", error


async def test_the_isolated_retry_after_a_timeout_is_held(kitchen: Kitchen) -> None:
    """Issue 27, case 2: ``client_session_timeout_seconds=1`` on a charge that takes 3 s;
    on the timeout the framework retries in a fresh "isolated" session (a new factory call,
    a new transport). The process's call ledger holds that retry: the charge runs once and
    the framework does not report success."""
    url = kitchen.url_for("baseline", {"delayMs": 3000, "tool": "charge"})
    names = readme.setup(url)
    server = MCPServerStreamableHttp(
        params={"url": names["URL"], "httpx_client_factory": names["factory"]},
        client_session_timeout_seconds=1,
        max_retry_attempts=1,
        retry_backoff_seconds_base=0.01,
    )
    with anyio.fail_after(checks.TIMEOUT):
        async with server:
            listed = {t.name: t for t in await server.list_tools()}
            charge = MCPUtil.to_function_tool(
                listed["charge"], server, False, failure_error_function=None
            )
            error = await checks.raised(invoke(charge, checks.CHARGE))
        await checks.settled(kitchen, "charge", checks.CHARGE["key"], after=3.5)
    runs = kitchen.state()["executionsByKey"].get("charge", {})
    assert runs == {checks.CHARGE["key"]: 1}, f"the tool ran {runs}: the isolated retry was sent"
    assert error is not None, "the framework reported success for a charge it sent twice"
    assert checks.contained_outcome(error) in {"DUPLICATE_HELD", "DUPLICATE_IN_FLIGHT"}, error
    first, *retries = checks.calls(names["history"], "charge")
    assert first.post_count == 1
    assert retries and all(r.post_count == 0 for r in retries), [r.to_dict() for r in retries]
