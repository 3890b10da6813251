"""The command (cli/main.py): its arguments, and `kitchen` serving and stopping."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mcp_safe_retry.cli import main

pytestmark = pytest.mark.e2e


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
