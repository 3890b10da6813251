"""smolagents[mcp] 1.26.0 (with mcp<2: httpx) through README's snippet, against the kitchen.

smolagents' ``MCPClient`` (mcpadapt underneath) deep-copies its parameters, the factory with
its ``History`` included, and runs the session in a thread of its own; its tools are called
as the agent calls them, without a model. Its tool calls wait without a timeout, so the test
runs them in a thread it can give up on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from mcp.shared.exceptions import McpError
from smolagents import MCPClient

from mcp_safe_retry.records import CONTAINED_ERROR_CODE
from tests.frameworks import checks, readme
from tests.kitchen_process import Kitchen

pytestmark = [pytest.mark.e2e]


def bounded(work: Callable[[], Any], timeout: float) -> Any:
    """Run `work` in a daemon thread; fail the test if it has not returned after `timeout`."""
    outcome: list[Any] = []
    thread = threading.Thread(target=lambda: outcome.append(work()), daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        pytest.fail(f"smolagents still waiting after {timeout} s")
    assert outcome, "the work raised in its thread (see the thread's exception above)"
    return outcome[0]


def use_tools(names: dict[str, Any]) -> tuple[Any, McpError]:
    """Connect, call lookup then charge with the agent's tool objects, disconnect."""
    client = readme.build("smolagents[mcp]", names)
    try:
        tools = {tool.name: tool for tool in client.get_tools()}
        looked_up = tools["lookup"](**checks.LOOKUP)
        try:
            tools["charge"](**checks.CHARGE)
        except McpError as error:
            return looked_up, error
        raise AssertionError("charge met a 503 and returned")
    finally:
        client.disconnect()


def test_read_retried_unsafe_sent_once_records_in_history(kitchen: Kitchen) -> None:
    names = readme.setup(kitchen.url_for(checks.SCENARIO, checks.PARAMS), mcp1=True)
    names["MCPClient"] = MCPClient
    looked_up, error = bounded(lambda: use_tools(names), checks.TIMEOUT)
    assert '"key": "a"' in looked_up
    # Bare mcp 1.x ends the session on the 503 and smolagents waits for good; mcp_client
    # contains it as a JSON-RPC error, raised to the agent.
    assert error.error.code == CONTAINED_ERROR_CODE
    assert error.error.data["source"] == "mcp-safe-retry"
    # mcpadapt called a deep copy of the factory; the records still reach the user's History.
    checks.assert_read_retried_once_run(kitchen, names["history"])
    checks.assert_unsafe_sent_once_never_run(kitchen, names["history"])
