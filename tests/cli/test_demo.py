"""`mcp-safe-retry demo` (cli/demo.py, its cases in cli/demo_cases.py): the official client
through every fault scenario of the kitchen, checking itself."""

from __future__ import annotations

import io
import json

import anyio
import attrs
import pytest

from mcp_safe_retry.cli.demo import run_demo
from mcp_safe_retry.cli.demo_cases import CASES

pytestmark = pytest.mark.e2e


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
