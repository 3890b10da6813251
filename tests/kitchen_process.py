"""A kitchen served by another Python, reached over loopback.

Tests that run in an environment without mcp 2.x (the mcp 1.x client in tests/mcp1, the agent
frameworks in tests/frameworks) start the kitchen as a subprocess of the Python named by
``MCP_SAFE_RETRY_KITCHEN_PYTHON`` (the main .venv) and talk to it over HTTP only.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

KITCHEN_PYTHON = "MCP_SAFE_RETRY_KITCHEN_PYTHON"
START_TIMEOUT = 30.0


class Kitchen:
    """The kitchen at `url` (its MCP endpoint); each `url_for` starts a fresh run."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.run = ""

    def url_for(self, scenario: str, params: dict[str, Any] | None = None) -> str:
        """Return the MCP URL of a new run of `scenario` (later `state()` calls read that run)."""
        self.run = uuid.uuid4().hex[:12]
        query = {"scenario": scenario, "run": self.run}
        if params:
            query["params"] = json.dumps(params)
        return f"{self.url}?{urlencode(query)}"

    def state(self, run: str | None = None) -> dict[str, Any]:
        """Return the kitchen's POSTs and tool executions for `run` (default: the latest run)."""
        base = self.url.rsplit("/", 1)[0]
        response = httpx.get(f"{base}/kitchen/state", params={"run": run or self.run}, timeout=10)
        state: dict[str, Any] = response.raise_for_status().json()
        return state

    def posts(self, tool: str) -> int:
        """Return how many `tools/call` POSTs named `tool` in the latest run."""
        return sum(1 for p in self.state()["posts"] if p["tool"] == tool)


@contextmanager
def kitchen_process() -> Iterator[Kitchen]:
    """Start ``mcp-safe-retry kitchen --port 0`` (as README shows); stop it by pid after."""
    python = os.environ.get(KITCHEN_PYTHON)
    if not python:
        pytest.fail(f"{KITCHEN_PYTHON} must name a Python with mcp-safe-retry[kitchen] (mcp 2.x)")
    process = subprocess.Popen(
        [python, "-m", "mcp_safe_retry", "kitchen", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield Kitchen(first_line(process))
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def first_line(process: subprocess.Popen[str]) -> str:
    """Return the URL the kitchen prints first, failing clearly if it never comes."""
    stdout = process.stdout
    assert stdout is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(START_TIMEOUT)
    url = lines[0].strip() if lines else ""
    if not url.startswith("http://127.0.0.1:"):
        pytest.fail(f"the kitchen did not start (exit status {process.poll()}, said {url!r})")
    return url
