"""A pytest plugin that writes each test's outcome, by test id, to a JSON file.

Loaded with ``-p sdk_results`` (this directory on PYTHONPATH) into both runs of an SDK's
own tests; ``MCP_SAFE_RETRY_SDK_RESULTS`` names the file. Under pytest-xdist only the
controller writes: it hears every worker's reports.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

# The worst outcome a test's phases (setup, call, teardown) reached wins.
_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "xpassed": 2, "failed": 3, "error": 3}


def _outcome(report: pytest.TestReport) -> str:
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.failed:
        return "failed" if report.when == "call" else "error"
    return "skipped" if report.skipped else "passed"


_EXCEPTION = re.compile(r"^[\s|]*(?:E\s+)?((?:[\w.]+\.)?\w*(?:Error|Exception|Exit)\b.*)$")


def _error_line(text: str) -> str:
    """The innermost exception's line (an exception group's first leaf), to group failures
    by cause."""
    lines = text.strip().splitlines()
    found = [match.group(1) for line in lines if (match := _EXCEPTION.match(line))]
    leaves = [line for line in found if "sub-exception" not in line]
    asserted = [line[1:] for line in lines if line.startswith("E ")][:1]  # a failed assert
    return ((leaves or found or asserted or lines or [""])[-1]).strip()[:300]


class Results:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.outcomes: dict[str, str] = {}
        self.messages: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        outcome = _outcome(report)
        before = self.outcomes.get(report.nodeid, "passed")
        if report.nodeid not in self.outcomes or _RANK[outcome] > _RANK[before]:
            self.outcomes[report.nodeid] = outcome
        if report.failed and report.nodeid not in self.messages:
            self.messages[report.nodeid] = _error_line(str(report.longrepr))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:  # a module that fails to import is an error, not a test less
            self.outcomes[report.nodeid] = "error"
            self.messages[report.nodeid] = _error_line(str(report.longrepr))

    def pytest_sessionfinish(self) -> None:
        document = {"outcomes": self.outcomes, "messages": self.messages}
        self.path.write_text(json.dumps(document, indent=1, sort_keys=True), encoding="utf-8")


def pytest_configure(config: pytest.Config) -> None:
    target = os.environ.get("MCP_SAFE_RETRY_SDK_RESULTS")
    if target and not hasattr(config, "workerinput"):  # an xdist worker reports to the controller
        config.pluginmanager.register(Results(Path(target)), "sdk-results")
