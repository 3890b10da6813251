"""pydantic-ai-slim[mcp] 2.68.0 (mcp 2.x) through README's snippet, against the kitchen.

The toolset's own tools (`get_tools`, `call_tool`: what an agent run calls) are used without
a model.
"""

from __future__ import annotations

import anyio
import pytest
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from tests.frameworks import checks, readme
from tests.kitchen_process import Kitchen

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


async def test_read_retried_unsafe_sent_once_records_in_history(kitchen: Kitchen) -> None:
    names = readme.setup(kitchen.url_for(checks.SCENARIO, checks.PARAMS))
    names["MCPToolset"] = MCPToolset
    http = names["http"]
    context = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    with anyio.fail_after(checks.TIMEOUT):
        toolset = readme.build("pydantic-ai-slim[mcp]", names)
        async with http, toolset:  # the toolset never closes the client it borrows
            tools = await toolset.get_tools(context)
            looked_up = await toolset.call_tool("lookup", checks.LOOKUP, context, tools["lookup"])
            with pytest.raises(ModelRetry) as refused:
                await toolset.call_tool("charge", checks.CHARGE, context, tools["charge"])
    assert looked_up["key"] == "a", looked_up
    # mcp 2.x's answer to the 503, which the toolset hands the model as a retry prompt.
    assert str(refused.value) == "Server returned an error response"
    assert http.is_closed
    checks.assert_read_retried_once_run(kitchen, names["history"])
    checks.assert_unsafe_sent_once_never_run(kitchen, names["history"])
