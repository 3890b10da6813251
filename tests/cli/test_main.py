"""The command (cli/main.py): its arguments, and `kitchen` serving and stopping."""

from __future__ import annotations

import socket
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
        pytest.param(
            ["probe", "http://x", "--tool", "t", "--timeout", "0"], "seconds > 0", id="timeout-0"
        ),
        pytest.param(
            ["probe", "http://x", "--tool", "t", "--timeout", "-1"], "seconds > 0", id="timeout-neg"
        ),
        pytest.param(
            ["probe", "http://x", "--tool", "t", "--timeout", "soon"],
            "seconds > 0",
            id="timeout-nan",
        ),
    ],
)
def test_bad_arguments(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    if argv[0] == "probe":  # the usage shown is the subcommand's own
        assert err.startswith("usage: mcp-safe-retry probe ")


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


def _run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_safe_retry", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_version() -> None:
    import mcp_safe_retry

    done = _run("--version")
    assert (done.returncode, done.stdout) == (0, f"mcp-safe-retry {mcp_safe_retry.__version__}\n")


def test_kitchen_on_a_busy_port_says_so_in_one_line() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        port = sock.getsockname()[1]
        done = _run("kitchen", "--port", str(port))
    assert done.returncode == 1
    assert done.stderr == f"kitchen: cannot listen on 127.0.0.1:{port}: Address already in use\n"


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_kitchen_refuses_an_invalid_port_by_its_usage(port: str) -> None:
    done = _run("kitchen", "--port", port)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("usage: mcp-safe-retry kitchen ")
    assert "argument --port: must be a port number 0..65535" in done.stderr


def test_a_closed_pipe_ends_the_demo_quietly() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_safe_retry", "demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    first = [process.stdout.readline() for _ in range(3)]  # what `| head -3` reads
    process.stdout.close()
    try:
        err = process.stderr.read()
        status = process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert first[0].startswith("kitchen on http://127.0.0.1:")
    assert status == 141 and "Traceback" not in err and "BrokenPipe" not in err


def test_colour_only_on_a_terminal_without_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from mcp_safe_retry.cli.report import Paint, format_table

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert Paint.for_stream(Terminal()).on and not Paint.for_stream(io.StringIO()).on
    table = format_table([("a", "b", "c", "d", "TOOL_SUCCESS", "e", "f")], paint=Paint(True))
    assert "\033[32mTOOL_SUCCESS" in table and "\033[1m" in table
    assert "\033[31mHTTP_ERROR" in Paint(True).outcome("HTTP_ERROR")
    monkeypatch.setenv("NO_COLOR", "1")
    assert not Paint.for_stream(Terminal()).on
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TERM", "dumb")
    assert not Paint.for_stream(Terminal()).on
