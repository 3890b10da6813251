"""pydantic-ai-slim[mcp] 2.68.0 (mcp 2.x) through README's snippet, against the kitchen.

The toolset's own tools (`get_tools`, `call_tool`: what an agent run calls) are used without
a model.
"""

from __future__ import annotations

import anyio
import pytest
from pydantic_ai import Agent, ModelRetry, RunContext, UnexpectedModelBehavior
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
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


async def test_the_models_retry_of_a_call_that_may_have_run_is_held(kitchen: Kitchen) -> None:
    """`tool_error_behavior='retry'` (the default) invites the model to call charge again after
    the drop; the model does (a scripted FunctionModel, no model call); the guard holds it."""
    names = readme.setup(kitchen.url_for(*checks.ABORT_AFTER))
    names["MCPToolset"] = MCPToolset
    prompts: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        # A ModelRetry reaches the model as the tool's return, marked "retried".
        last = messages[-1].parts
        retry = [str(p.content) for p in last if getattr(p, "outcome", None) == "retried"]
        prompts.extend(retry)
        if len(messages) == 1 or retry:  # the user's request, or a retry prompt: call charge
            return ModelResponse(parts=[ToolCallPart("charge", checks.CHARGE)])
        return ModelResponse(parts=[TextPart("charged")])

    http = names["http"]
    toolset = readme.build("pydantic-ai-slim[mcp]", names)
    agent = Agent(FunctionModel(model), toolsets=[toolset])
    with anyio.fail_after(checks.TIMEOUT):
        async with http, toolset:
            error = await checks.raised(agent.run("charge c"))
    checks.assert_recall_held(kitchen, names["history"])
    # The agent stops: the tool failed more often than its retries allow.
    assert isinstance(error, UnexpectedModelBehavior), error
    assert checks.contained_outcome(error) == "DUPLICATE_HELD", error
    assert len(prompts) == 1 and prompts[0].startswith("mcp-safe-retry: NETWORK_ERROR"), prompts
