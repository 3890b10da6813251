"""strands-agents 1.62.0 (mcp 2.1, httpx2) through README's snippet, against the kitchen.

strands' ``MCPClient(url=...)`` takes no HTTP client: the snippet gives it
``mcp_safe_retry.frameworks.strands.streamable_http`` as its ``transport_callable``. The
agent's own tool objects (``MCPAgentTool``, what an ``Agent`` hands the model) are streamed
as the agent streams them, without a model.
"""

from __future__ import annotations

import functools
from typing import Any

import anyio
import pytest
from strands.tools.mcp import MCPAgentTool, MCPClient

from mcp_safe_retry import mcp_client as httpx_mcp_client
from mcp_safe_retry.frameworks.strands import streamable_http
from tests.frameworks import checks, readme
from tests.kitchen_process import Kitchen

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


async def invoke(tool: MCPAgentTool, arguments: dict[str, Any]) -> Any:
    """Stream `tool` as the agent does for a model's tool use; return the final result."""
    events = [
        e
        async for e in tool.stream(
            {"toolUseId": "use-1", "name": tool.tool_name, "input": arguments}, {}
        )
    ]
    return events[-1].tool_result


async def test_read_retried_unsafe_sent_once_records_in_history(kitchen: Kitchen) -> None:
    names = readme.setup(kitchen.url_for(checks.SCENARIO, checks.PARAMS))
    names |= {"MCPClient": MCPClient, "streamable_http": streamable_http}
    with anyio.fail_after(checks.TIMEOUT), readme.build("strands-agents", names) as client:
        tools = {tool.tool_name: tool for tool in client.list_tools_sync()}
        looked_up = await invoke(tools["lookup"], checks.LOOKUP)
        charged = await invoke(tools["charge"], checks.CHARGE)
    assert looked_up["status"] == "success"
    assert looked_up["structuredContent"]["key"] == "a"
    # mcp 2.x answers the 503 as a JSON-RPC error for that call; strands reports it to the model.
    assert charged["status"] == "error"
    assert charged["content"] == [
        {"text": "Tool execution failed: Server returned an error response"}
    ]
    checks.assert_read_retried_once_run(kitchen, names["history"])
    checks.assert_unsafe_sent_once_never_run(kitchen, names["history"])


async def test_a_factory_of_the_other_library_is_refused_by_name(kitchen: Kitchen) -> None:
    url = kitchen.url_for("baseline")
    transport = streamable_http(url, functools.partial(httpx_mcp_client))
    with anyio.fail_after(checks.TIMEOUT), pytest.raises(TypeError) as raised:
        async with transport():
            pass
    assert "use mcp_safe_retry.httpx2.mcp_client" in str(raised.value)
    assert kitchen.state()["posts"] == []  # refused before anything was sent
