"""The MCP conformance suite (``@modelcontextprotocol/conformance``, its server scenarios:
the suite is the client) against ``@modelcontextprotocol/server-everything``, directly and
through the gateway: every check ends as it does direct, save the DNS-rebinding scenario,
which the gateway's Host check passes where the server alone half fails it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gateway_support import served_gateway

pytestmark = pytest.mark.e2e

MODULES = Path(os.environ.get("MCP_SAFE_RETRY_NODE_MODULES", "."))
EVERYTHING = MODULES / "@modelcontextprotocol/server-everything/dist/index.js"
CONFORMANCE = MODULES / "@modelcontextprotocol/conformance/dist/index.js"
REBINDING = "dns-rebinding-protection"


def node() -> str:
    return os.environ.get("MCP_SAFE_RETRY_NODE", "node")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def everything() -> Iterator[str]:
    """server-everything over Streamable HTTP on 127.0.0.1 (stopped by pid)."""
    port = free_port()
    process = subprocess.Popen(
        [node(), str(EVERYTHING), "streamableHttp"],
        env={**os.environ, "PORT": str(port)}, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stderr is not None
    ready = threading.Event()

    def watch() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            if "listening on port" in line:
                ready.set()

    threading.Thread(target=watch, daemon=True).start()
    try:
        if not ready.wait(30):
            pytest.fail(f"server-everything did not start (exit status {process.poll()})")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def conformance(url: str, out: Path) -> dict[str, dict[str, str]]:
    """Every server scenario's checks against ``url``: scenario -> check id -> status."""
    done = subprocess.run(
        [node(), str(CONFORMANCE), "server", "--url", url, "-o", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert "=== SUMMARY ===" in done.stdout + done.stderr, done.stderr[-2000:]
    results: dict[str, dict[str, str]] = {}
    for checks in sorted(out.glob("*/checks.json")):
        scenario = checks.parent.name.removeprefix("server-").rsplit("-", 6)[0]
        statuses = {c["id"]: c["status"] for c in json.loads(checks.read_text())}
        results[scenario] = statuses
    assert len(results) >= 30, sorted(results)
    return results


def test_conformance_through_the_gateway_equals_conformance_direct(
    everything: str, tmp_path: Path
) -> None:
    direct = conformance(everything, tmp_path / "direct")
    with served_gateway(everything) as (_, url):
        through = conformance(url, tmp_path / "gateway")
    assert through.keys() == direct.keys()
    for scenario in direct:
        if scenario != REBINDING:
            assert through[scenario] == direct[scenario], scenario
    assert set(through[REBINDING].values()) == {"SUCCESS"}  # a foreign Host: 421 here
    assert "FAILURE" in direct[REBINDING].values()
