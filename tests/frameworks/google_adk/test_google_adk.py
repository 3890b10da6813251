"""google-adk[mcp] 2.13.0 (mcp 2.x) through README's snippet, against the kitchen.

The toolset's own `McpTool`s (what an ADK agent calls) run with a real `ToolContext`, without
a model.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
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


@pytest.fixture
def client_certificate(kitchen: Kitchen, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine where ADK's mTLS probe succeeds: ADC and a workload client certificate.

    Both are local files (a self-signed certificate, credentials whose token endpoint is the
    kitchen on loopback), so nothing leaves the machine.
    """
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=workload",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    config = tmp_path / "certificate_config.json"
    config.write_text(
        json.dumps({"cert_configs": {"workload": {"cert_path": str(cert), "key_path": str(key)}}})
    )
    credentials = tmp_path / "adc.json"
    credentials.write_text(
        json.dumps(
            {
                "type": "authorized_user",
                "client_id": "client",
                "client_secret": "secret",
                "refresh_token": "refresh",
                "token_uri": kitchen.url.rsplit("/", 1)[0] + "/token",
            }
        )
    )
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(credentials))
    monkeypatch.setenv("GOOGLE_API_CERTIFICATE_CONFIG", str(config))
    monkeypatch.delenv(MTLS_SETTING, raising=False)


class CountingFactory:
    """README's factory, counting the clients ADK asks it for."""

    def __init__(self, factory: Any) -> None:
        self.factory = factory
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.factory(*args, **kwargs)


async def call_through_adk(
    kitchen: Kitchen, *calls: tuple[str, dict[str, Any]]
) -> tuple[dict[str, Any], CountingFactory, list[Any]]:
    names = readme.setup(kitchen.url_for(checks.SCENARIO, checks.PARAMS))
    names.update(
        McpToolset=McpToolset, StreamableHTTPConnectionParams=StreamableHTTPConnectionParams
    )
    names["factory"] = counting = CountingFactory(names["factory"])
    with anyio.fail_after(checks.TIMEOUT):
        results = await run_tools(readme.build("google-adk[mcp]", names), *calls)
    return names, counting, results


BOTH = (("lookup", checks.LOOKUP), ("charge", checks.CHARGE))


@pytest.mark.usefixtures("client_certificate")
async def test_when_the_mtls_probe_succeeds_adk_drops_our_factory_silently(
    kitchen: Kitchen,
) -> None:
    names, factory, _ = await call_through_adk(kitchen, *BOTH)
    # ADK reached the kitchen with a client of its own: our factory was never asked and no
    # record exists. Its google-auth session retries 408, 429, 500, 503 and 504 for every
    # request, so the UNSAFE charge that met a 503 was sent again and ran.
    assert factory.calls == 0
    assert names["history"].records() == []
    assert (kitchen.posts("lookup"), kitchen.posts("charge")) == (2, 2)
    assert kitchen.state()["executions"] == {"lookup": 1, "charge": 1}


@pytest.mark.usefixtures("client_certificate")
async def test_with_the_setting_our_factory_stays_and_records_arrive(
    kitchen: Kitchen, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MTLS_SETTING, "false")
    names, factory, (looked_up, charged) = await call_through_adk(kitchen, *BOTH)
    assert factory.calls >= 1
    assert json.loads(looked_up["content"][0]["text"])["key"] == "a", looked_up
    assert "error" in charged
    checks.assert_read_retried_once_run(kitchen, names["history"])
    checks.assert_unsafe_sent_once_never_run(kitchen, names["history"])
