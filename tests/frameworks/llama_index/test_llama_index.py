"""llama-index-tools-mcp 0.6.0 (mcp 2.x) through README's snippet, against the kitchen.

The spec's own `FunctionTool`s (what a llama-index agent calls) are called without a model.
"""

from __future__ import annotations

import json

import anyio
import pytest
from llama_index.tools.mcp import BasicMCPClient, McpToolSpec
from mcp.shared.exceptions import MCPError

from tests.frameworks import checks, readme
from tests.kitchen_process import Kitchen

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


async def test_read_retried_unsafe_sent_once_records_in_history(kitchen: Kitchen) -> None:
    names = readme.setup(kitchen.url_for(checks.SCENARIO, checks.PARAMS))
    names.update(McpToolSpec=McpToolSpec, BasicMCPClient=BasicMCPClient)
    http = names["http"]
    with anyio.fail_after(checks.TIMEOUT):
        async with http:  # BasicMCPClient never closes the client it is given
            spec = readme.build("llama-index-tools-mcp", names)
            tools = {t.metadata.name: t for t in await spec.to_tool_list_async()}
            looked_up = await tools["lookup"].acall(**checks.LOOKUP)
            with pytest.raises(BaseExceptionGroup) as raised:
                await tools["charge"].acall(**checks.CHARGE)
    assert not looked_up.is_error
    assert json.loads(looked_up.raw_output.content[0].text)["key"] == "a"
    # The tool raises mcp 2.x's answer to the 503, in the group of the per-call session.
    (error,) = raised.value.exceptions
    while isinstance(error, BaseExceptionGroup):
        (error,) = error.exceptions
    assert isinstance(error, MCPError) and str(error) == "Server returned an error response"
    checks.assert_read_retried_once_run(kitchen, names["history"])
    checks.assert_unsafe_sent_once_never_run(kitchen, names["history"])
