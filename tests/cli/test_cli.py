"""The command line: the demo checks itself; probe and kitchen against real servers."""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys

import anyio
import attrs
import pytest

from mcp_safe_retry.cli import main
from mcp_safe_retry.cli.demo import CASES, run_demo
from mcp_safe_retry_kitchen import KitchenServer

pytestmark = pytest.mark.e2e


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the official mcp client is asyncio-based


def test_demo_runs_every_scenario_and_checks_itself() -> None:
    out = io.StringIO()
    status = anyio.run(lambda: run_demo(out))
    text = out.getvalue()
    assert status == 0, text
    assert f"{len(CASES)}/{len(CASES)} scenarios behaved" in text
    assert "UNSAFE calls sent twice: 0" in text
    assert "FAIL" not in text


def test_demo_json_records() -> None:
    out = io.StringIO()
    cases = [c for c in CASES if c.scenario in ("errors.http_status_sequence", "tool_error")]
    status = anyio.run(lambda: run_demo(out, as_json=True, cases=cases))
    payload = json.loads(out.getvalue())
    assert status == 0
    assert [entry["ok"] for entry in payload] == [True] * len(cases)
    retried = payload[0]["records"][0]
    assert retried["httpStatuses"] == [503, 200]
    assert [a["retryOrigin"] for a in retried["attempts"]] == ["none", "sdk"]


def test_demo_fails_when_a_promise_is_broken() -> None:
    baseline = next(c for c in CASES if c.label == "baseline")
    broken = [attrs.evolve(baseline, posts=5)]  # a promise the kitchen will not keep
    out = io.StringIO()
    assert anyio.run(lambda: run_demo(out, cases=broken)) == 1
    assert "FAIL baseline" in out.getvalue()


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


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["probe", "http://x", "--tool", "t", "--args", "{oops"], "not valid JSON", id="bad-json"
        ),
        pytest.param(
            ["probe", "http://x", "--tool", "t", "--args", "[1]"], "JSON object", id="not-object"
        ),
        pytest.param(
            ["probe", "http://x", "--tool", "t", "--header", "nocolon"],
            "NAME:VALUE",
            id="bad-header",
        ),
        pytest.param(["probe", "http://x"], "--tool", id="no-tool"),
        pytest.param(["frobnicate"], "invalid choice", id="unknown-command"),
    ],
)
def test_bad_arguments(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_kitchen_command_serves_and_stops() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_safe_retry", "kitchen", "--port", "0", "--stateless"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_kitchen_command_rejects_bad_params() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mcp_safe_retry", "kitchen", "--params", "{nope"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2 and "not valid JSON" in result.stderr
