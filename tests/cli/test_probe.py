"""`mcp-safe-retry probe` (cli/probe.py, cli/report.py): a tool called on a real server, its
history printed, an unreachable server named."""

from __future__ import annotations

import json
import socket

import pytest

from mcp_safe_retry.cli import main
from mcp_safe_retry.kitchen import KitchenServer

pytestmark = pytest.mark.e2e


def test_probe_calls_a_tool_and_prints_the_history(capsys: pytest.CaptureFixture[str]) -> None:
    with KitchenServer() as kitchen:
        url = kitchen.url_for("errors.http_status_sequence", {"statusCodes": [200, 503, 200]})
        status = main(["probe", url, "--tool", "lookup", "--args", '{"key": "k"}', "--read"])
    out = capsys.readouterr().out
    assert status == 0
    assert "tools/call lookup" in out and "503,200" in out and "none,sdk" in out
    assert '"outcome": "TOOL_SUCCESS"' in out


def test_probe_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    with KitchenServer() as kitchen:
        status = main(
            [
                "probe",
                kitchen.url,
                "--tool",
                "charge",
                "--args",
                '{"key": "p1", "amount": 1}',
                "--json",
            ]
        )
    payload = json.loads(capsys.readouterr().out)
    assert status == 0 and payload["error"] is None
    calls = [r for r in payload["records"] if r["method"] == "tools/call"]
    assert calls[0]["idempotency"] == "unsafe" and calls[0]["outcome"] == "TOOL_SUCCESS"


def test_probe_unreachable_server_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    status = main(["probe", f"http://127.0.0.1:{port}/mcp", "--tool", "x", "--timeout", "2"])
    out = capsys.readouterr().out
    assert status == 1
    # The SDK's server/discover meets the refusal: it gets the ConnectError as it would bare
    # (a contained error would read as an older server), and the probe reports it.
    assert "error: ConnectError: All connection attempts failed" in out
    assert "NETWORK_ERROR" in out and "server/discover" in out
