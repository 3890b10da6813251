"""The official TypeScript SDK client (``@modelcontextprotocol/sdk``, run by node) calling
the kitchen through the gateway: what the retry transport does for a Python client in
process, the gateway does for it. It speaks 2025-11-25 (its newest revision).

Run by ``scripts/gateway_clients.sh``, which installs the SDK from the npm registry into a
cache outside the repository and names its ``node_modules`` in ``MCP_SAFE_RETRY_NODE_MODULES``
(tests/conftest.py leaves this folder out without it).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_safe_retry.kitchen import KitchenServer
from tests.gateway_support import GatewayProcess, gateway_process

pytestmark = pytest.mark.e2e

CLIENT = Path(__file__).with_name("client.cjs")
CHARGE = {"key": "k", "amount": 5}


def node() -> str:
    return os.environ.get("MCP_SAFE_RETRY_NODE", "node")


def call_with_ts(
    url: str, *calls: tuple[str, dict[str, Any]], legacy: bool = False, **headers: str
) -> dict[str, Any]:
    plan = {"url": url, "headers": headers, "legacy": legacy,
            "calls": [{"tool": tool, "arguments": args} for tool, args in calls]}  # fmt: skip
    env = {**os.environ, "NODE_PATH": os.environ["MCP_SAFE_RETRY_NODE_MODULES"]}
    done = subprocess.run(
        [node(), str(CLIENT), json.dumps(plan)],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


@pytest.fixture(scope="module")
def kitchen() -> Iterator[KitchenServer]:
    with KitchenServer() as server:
        yield server


@pytest.fixture(scope="module")
def gateway(
    kitchen: KitchenServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayProcess]:
    records = tmp_path_factory.mktemp("gateway") / "calls.jsonl"
    flags = ["--read", "lookup", "--config", str(_fast_backoff(records.parent))]
    with gateway_process(kitchen.url, records, *flags) as process:
        yield process


def _fast_backoff(folder: Path) -> Path:
    config = folder / "policy.toml"
    config.write_text("initial_backoff = 0.01\n")
    return config


def records_of(gateway: GatewayProcess, tool: str, run: str) -> list[dict[str, Any]]:
    """The gateway's records of ``tool`` calls (JSON lines, written by a thread: waited for)."""
    import time

    deadline = time.monotonic() + 10
    while True:
        found = [r for r in gateway.records() if r["tool"] == tool]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_a_read_that_meets_503_is_retried_and_runs_once(
    kitchen: KitchenServer, gateway: GatewayProcess
) -> None:
    codes = {"statusCodes": [503, 200], "method": "tools/call", "tool": "lookup"}
    url = kitchen.url_for("errors.http_status_sequence", codes)
    answer = call_with_ts(gateway.url_for(url), ("lookup", {"key": "a"}))
    assert answer["protocolVersion"] == "2025-11-25"
    assert answer["results"] == [{"isError": False, "content": answer["results"][0]["content"]}]
    state = kitchen.state_of(url)
    assert state.executions == {"lookup": 1}
    assert [p.status for p in state.posts if p.tool == "lookup"] == [503, 200]
    (record,) = records_of(gateway, "lookup", url)
    assert record["httpStatuses"] == [503, 200] and record["outcome"] == "TOOL_SUCCESS"
    assert [a["retryOrigin"] for a in record["attempts"]] == ["none", "sdk"]
    assert record["client"] == "gateway-test-ts@1.0.0"


def test_an_unsafe_503_is_sent_once_and_a_resend_after_a_drop_is_held(
    kitchen: KitchenServer, gateway: GatewayProcess
) -> None:
    codes = {"statusCodes": [503, 200], "tool": "charge"}
    url = kitchen.url_for("errors.http_status_sequence", codes)
    (refused,) = call_with_ts(gateway.url_for(url), ("charge", CHARGE))["results"]
    assert refused["error"]["code"] == -32010  # the in-process transport's contained error
    assert refused["error"]["data"]["outcome"] == "HTTP_ERROR"
    assert refused["error"]["data"]["reason"] == "not_idempotent"
    assert [p.status for p in kitchen.state_of(url).posts if p.tool == "charge"] == [503]
    assert kitchen.state_of(url).executions.get("charge", 0) == 0

    url = kitchen.url_for("connection_abort", {"when": "after", "tool": "charge"})
    dropped, held = call_with_ts(gateway.url_for(url), ("charge", CHARGE), ("charge", CHARGE))[
        "results"
    ]
    assert dropped["error"]["data"]["outcome"] == "NETWORK_ERROR"
    assert held["error"]["code"] == -32010
    assert held["error"]["data"]["outcome"] == "DUPLICATE_HELD"
    assert kitchen.state_of(url).executions_by_key == {"charge": {"k": 1}}  # it ran once
    outcomes = [r["outcome"] for r in records_of(gateway, "charge", url)]
    assert outcomes[-3:] == ["HTTP_ERROR", "NETWORK_ERROR", "DUPLICATE_HELD"]


def test_the_legacy_http_sse_transport_through_the_gateway() -> None:
    """The SDK's SSEClientTransport against the Python SDK's own legacy server: the
    ``endpoint`` event names the gateway's path, the POSTs and the answers pass through."""
    from mcp.server import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

    from tests.gateway_support import served_gateway
    from tests.serving import Served

    server = MCPServer("legacy")

    @server.tool()
    async def lookup(key: str) -> str:
        return f"found {key}"

    open_hosts = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    with (
        Served(server.sse_app(transport_security=open_hosts)) as upstream,
        served_gateway(upstream.url("/sse")) as (gateway, url),
    ):
        (result,) = call_with_ts(url, ("lookup", {"key": "a"}), legacy=True)["results"]
        assert result["isError"] is False and "found a" in json.dumps(result["content"])
        assert [s.path for s in upstream.requests("tools/call")] == ["/messages/"]
        (record,) = [r for r in gateway.history.records() if r.method == "tools/call"]
        assert record.tool == "lookup"
