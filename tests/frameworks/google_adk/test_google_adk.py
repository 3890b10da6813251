"""google-adk[mcp] 2.13.0 (mcp 2.x) through README's snippet, against the kitchen.

The toolset's own `McpTool`s (what an ADK agent calls) run with a real `ToolContext`, without
a model.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.sessions import InMemorySessionService
from google.adk.tools.mcp_tool import McpToolset, StreamableHTTPConnectionParams
from google.adk.tools.tool_context import ToolContext

from tests.frameworks import checks, readme
from tests.kitchen_process import Kitchen

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
MTLS_SETTING = "GOOGLE_API_USE_CLIENT_CERTIFICATE"


async def tool_context() -> ToolContext:
    """A tool context of a real (in-memory) session, as an agent run makes one."""
    sessions = InMemorySessionService()
    session = await sessions.create_session(app_name="kitchen", user_id="user")
    agent = LlmAgent(name="agent", model="gemini-2.5-flash")  # never called
    invocation = InvocationContext(
        session_service=sessions, invocation_id="invocation", agent=agent, session=session
    )
    return ToolContext(invocation, function_call_id="call-1")


async def run_tools(toolset: McpToolset, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """Call each (tool, arguments) through the toolset's tools; close the toolset."""
    context = await tool_context()
    try:
        tools = {t.name: t for t in await toolset.get_tools()}
        return [
            await tools[name].run_async(args=args, tool_context=context) for name, args in calls
        ]
    finally:
        await toolset.close()


async def test_read_retried_unsafe_sent_once_records_in_history(
    kitchen: Kitchen, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MTLS_SETTING, "false")  # as README says: keeps our factory in place
    names = readme.setup(kitchen.url_for(checks.SCENARIO, checks.PARAMS))
    names.update(
        McpToolset=McpToolset, StreamableHTTPConnectionParams=StreamableHTTPConnectionParams
    )
    with anyio.fail_after(checks.TIMEOUT):
        looked_up, charged = await run_tools(
            readme.build("google-adk[mcp]", names),
            ("lookup", checks.LOOKUP),
            ("charge", checks.CHARGE),
        )
    assert json.loads(looked_up["content"][0]["text"])["key"] == "a", looked_up
    # ADK turns the tool's MCPError into a result the model reads.
    assert charged == {"error": "MCP tool execution failed: Server returned an error response"}
    checks.assert_read_retried_once_run(kitchen, names["history"])
    checks.assert_unsafe_sent_once_never_run(kitchen, names["history"])
