"""langchain-mcp-adapters 0.3.2 (mcp 1.x, httpx) through README's snippet, against the kitchen.

`MultiServerMCPClient.get_tools()` gives the LangChain tools an agent hands the model (each
call opens a session of its own through the factory); they are invoked as the agent invokes
them, without a model.
"""

from __future__ import annotations

import anyio
import pytest
from langchain_mcp_adapters.client import MultiServerMCPClient
from mcp.shared.exceptions import McpError

from mcp_safe_retry.records import CONTAINED_ERROR_CODE
from tests.frameworks import checks, readme
from tests.kitchen_process import Kitchen

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


async def test_read_retried_unsafe_sent_once_records_in_history(kitchen: Kitchen) -> None:
    names = readme.setup(kitchen.url_for(checks.SCENARIO, checks.PARAMS), mcp1=True)
    names["MultiServerMCPClient"] = MultiServerMCPClient
    client = readme.build("langchain-mcp-adapters", names)
    with anyio.fail_after(checks.TIMEOUT):
        tools = {tool.name: tool for tool in await client.get_tools()}
        looked_up = await tools["lookup"].ainvoke(checks.LOOKUP)
        # A transport or session failure is raised, not handed to the model (handle_tool_errors
        # covers isError results only). Bare mcp 1.x would end the session on the 503:
        # ExceptionGroup(HTTPStatusError); mcp_client contains it as a JSON-RPC error.
        with pytest.raises(McpError) as raised:
            await tools["charge"].ainvoke(checks.CHARGE)
    assert '"key": "a"' in str(looked_up)
    assert raised.value.error.code == CONTAINED_ERROR_CODE
    assert raised.value.error.data["source"] == "mcp-safe-retry"
    checks.assert_read_retried_once_run(kitchen, names["history"])
    checks.assert_unsafe_sent_once_never_run(kitchen, names["history"])


async def test_a_recall_through_a_new_session_is_held(kitchen: Kitchen) -> None:
    """Issue 27, case 1: each tool call opens a session, and so a client, of its own (the
    factory is called again): the charge ran and its connection dropped; the agent invokes
    the tool again through a fresh client, which the process's call ledger holds: run once."""
    names = readme.setup(kitchen.url_for(*checks.ABORT_AFTER), mcp1=True)
    names["MultiServerMCPClient"] = MultiServerMCPClient
    client = readme.build("langchain-mcp-adapters", names)
    with anyio.fail_after(checks.TIMEOUT):
        tools = {tool.name: tool for tool in await client.get_tools()}
        dropped = await checks.raised(tools["charge"].ainvoke(checks.CHARGE))
        again = await checks.raised(tools["charge"].ainvoke(checks.CHARGE))
    checks.assert_recall_held(kitchen, names["history"])
    assert checks.contained_outcome(dropped) == "NETWORK_ERROR", dropped
    assert checks.contained_outcome(again) == "DUPLICATE_HELD", again
