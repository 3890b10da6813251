"""The gateway served for tests: in this process (``served_gateway``, uvicorn in a thread on
a port of its own) or as ``mcp-safe-retry gateway`` in a child process of the main .venv's
Python (``gateway_process``, for clients that run elsewhere: node, the mcp 1.x venv). Both on
127.0.0.1; the child is stopped by its pid."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.serving import Served, bind_loopback

KITCHEN_PYTHON = "MCP_SAFE_RETRY_KITCHEN_PYTHON"
START_TIMEOUT = 30.0


@contextmanager
def served_gateway(upstream: str, **options: Any) -> Iterator[tuple[Any, str]]:
    """``mcp_safe_retry.gateway.app(upstream, **options)`` on 127.0.0.1; yields the app and
    its URL for the upstream's path (the upstream's query is the gateway's to add)."""
    from mcp_safe_retry.gateway import app

    sock = bind_loopback()
    port = sock.getsockname()[1]
    options.setdefault("allowed_hosts", [f"127.0.0.1:{port}", f"localhost:{port}"])
    gateway = app(upstream, **options)
    with Served(gateway, sock) as served:
        yield gateway, served.url(gateway.paths[0])


class GatewayProcess:
    """A gateway in a child process: its URL, and the records it wrote."""

    def __init__(self, url: str, records: Path, process: subprocess.Popen[str]) -> None:
        self.url = url
        self.records_path = records
        self.process = process

    def url_for(self, kitchen_url: str) -> str:
        """The gateway URL that reaches the kitchen run ``kitchen_url`` names (its query)."""
        query = kitchen_url.partition("?")[2]
        return f"{self.url}?{query}" if query else self.url

    def records(self) -> list[dict[str, Any]]:
        """The records written so far (the sink writes from a thread: a moment behind)."""
        if not self.records_path.exists():
            return []
        lines = self.records_path.read_text().splitlines()
        return [json.loads(line) for line in lines if line.strip()]


@contextmanager
def gateway_process(upstream: str, records: Path, *flags: str) -> Iterator[GatewayProcess]:
    """``mcp-safe-retry gateway --upstream UPSTREAM --records RECORDS FLAGS`` on port 0."""
    python = os.environ.get(KITCHEN_PYTHON, sys.executable)
    command = [python, "-m", "mcp_safe_retry", "gateway", "--upstream", upstream]
    command += ["--records", str(records), "--log-level", "warning", *flags]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        yield GatewayProcess(first_line(process, "the gateway"), records, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def first_line(process: subprocess.Popen[str], what: str) -> str:
    """The URL a child prints first, failing clearly if it never comes."""
    stdout = process.stdout
    assert stdout is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(START_TIMEOUT)
    url = lines[0].strip() if lines else ""
    if not url.startswith("http://127.0.0.1:"):
        pytest.fail(f"{what} did not start (exit status {process.poll()}, said {url!r})")
    return url
