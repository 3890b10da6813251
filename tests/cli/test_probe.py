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
    assert "TOOL_SUCCESS" in out and "the tool answered:" in out and '"key": "k"' in out
    assert "attempts of tools/call lookup" in out and "+00:00" in out  # ISO times, UTC
    assert '"attempts"' not in out  # the JSON record only with --json


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
    assert status == 0 and payload["error"] is None and payload["ok"] is True
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


def test_probe_of_an_unknown_tool_fails_and_shows_the_servers_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with KitchenServer() as kitchen:
        status = main(["probe", kitchen.url, "--tool", "nope"])
    out = capsys.readouterr().out
    assert status == 1
    assert "the tool reported an error:\nUnknown tool: nope" in out


def test_probe_shows_the_servers_own_error_message(capsys: pytest.CaptureFixture[str]) -> None:
    with KitchenServer() as kitchen:
        status = main(["probe", f"{kitchen.url}?scenario=nope", "--tool", "lookup"])
    out = capsys.readouterr().out
    assert status == 1
    assert out.count("the server said: HTTP 400: unknown scenario 'nope'; known: [") == 1


def test_probe_of_a_server_that_never_answers_ends_within_its_timeout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import time

    with socket.socket() as sock:  # accepts connections (the backlog), never answers
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        port = sock.getsockname()[1]
        import anyio

        from mcp_safe_retry.cli.probe import probe

        said: list[str] = []
        started = time.monotonic()
        result = anyio.run(
            lambda: probe(
                f"http://127.0.0.1:{port}/mcp", "lookup", {}, timeout=1.5, progress=said.append
            )
        )
        took = time.monotonic() - started
    assert not result.ok
    assert result.error == (
        "no answer within 1.5 s (the --timeout): still waiting for a connection and the handshake"
    )
    assert took < 1.5 + 3  # the imports of the SDK come before the clock starts
    assert said and said[0].startswith("waiting for a connection and the handshake: 1 s of 1.5 s")
