"""mcp-use 1.7.1 (mcp 1.x, httpx) through README's snippet, against the kitchen.

mcp-use has no public hook for the HTTP client: the snippet builds the connector with
``mcp_safe_retry.frameworks.mcp_use.http_connector``. The LangChain tools mcp-use's agent hands
the model (``LangChainAdapter.load_tools_for_connector``) are invoked as the agent invokes
them, without a model.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest
from mcp_use.agents.adapters import LangChainAdapter
from mcp_use.client.connectors import HttpConnector
from mcp_use.client.session import MCPSession

from mcp_safe_retry import mcp_client
from mcp_safe_retry.frameworks import mcp_use as adapter
from mcp_safe_retry.frameworks.mcp_use import http_connector
from tests.frameworks import checks, readme
from tests.kitchen_process import Kitchen

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


async def use_tools(connector: HttpConnector) -> tuple[Any, Any]:
    """Connect, adapt the tools as mcp-use's agent does, call lookup then charge."""
    async with MCPSession(connector):
        adapted = await LangChainAdapter().load_tools_for_connector(connector)
        tools = {tool.name: tool for tool in adapted}
        looked_up = await tools["lookup"].ainvoke(checks.LOOKUP)
        charged = await tools["charge"].ainvoke(checks.CHARGE)
    return looked_up, charged


async def test_read_retried_unsafe_sent_once_records_in_history(kitchen: Kitchen) -> None:
    names = readme.setup(kitchen.url_for(checks.SCENARIO, checks.PARAMS), mcp1=True)
    names["http_connector"] = http_connector
    connector = readme.build("mcp-use", names)
    # In a task of its own: mcp-use enters the SDK session's task group by hand and does not
    # leave it in order, which an anyio cancel scope around it rejects ("Attempted to exit a
    # cancel scope that isn't the current tasks's current cancel scope").
    looked_up, charged = await asyncio.wait_for(use_tools(connector), checks.TIMEOUT)
    assert '"key": "a"' in looked_up
    # The adapter hands the model the error (handle_tool_error); the session survived it.
    assert charged["error"] == "McpError"
    assert charged["details"] == "mcp-safe-retry: HTTP_ERROR after 1 attempt(s): HTTP 503"
    checks.assert_read_retried_once_run(kitchen, names["history"])
    checks.assert_unsafe_sent_once_never_run(kitchen, names["history"])


def test_the_connector_is_mcp_uses_own_with_one_method_overridden() -> None:
    connector = http_connector("http://127.0.0.1:1/mcp", functools.partial(mcp_client))
    assert isinstance(connector, HttpConnector)
    overridden = {
        name
        for name, value in vars(type(connector)).items()
        if callable(value) and getattr(HttpConnector, name, None) is not value
    }
    assert overridden == {"__init__", adapter.OVERRIDDEN}
    # The method still exists upstream with the shape this module relies on.
    assert callable(HttpConnector(base_url="http://127.0.0.1:1/mcp")._build_httpx_factory())


def test_a_missing_client_builder_fails_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # A release that builds its client elsewhere: the adapter says so instead of building a
    # connector that sends around the retry transport.
    monkeypatch.delattr(HttpConnector, adapter.OVERRIDDEN)
    with pytest.raises(RuntimeError, match=r"no HttpConnector\._build_httpx_factory"):
        http_connector("http://127.0.0.1:1/mcp", mcp_client)


def test_verify_goes_to_the_factory_not_the_connector() -> None:
    with pytest.raises(TypeError, match=r"give verify= to the client factory"):
        http_connector("http://127.0.0.1:1/mcp", mcp_client, verify=False)
