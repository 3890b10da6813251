"""The benchmark command runs in quick mode and produces sane output (no timed assertion)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_quick_benchmark_runs_and_reports(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    report = (tmp_path / "RESULTS.md").read_text()

    cases = {(row["case"], row["mode"]) for row in results["mock"]}
    assert {("json-1k", "sync"), ("json-64k", "async"), ("sse-1m", "sync")} <= cases
    rows = results["mock"] + results.get("loopback", [])
    if importlib.util.find_spec("uvicorn") is not None:
        assert results["loopback"]
    for row in rows:
        names = {"httpx", "mcp-safe-retry"}
        if importlib.util.find_spec("httpx_retries") is not None:
            names.add("httpx-retries")
        assert names <= set(row["contenders"])
        for cell in row["contenders"].values():
            assert cell["us_per_call"] > 0
            assert 0 < cell["ratio"] < 1000
        assert row["contenders"]["httpx"]["ratio"] == 1.0
    assert all(r["calls_per_s"] > 0 for r in results["classifier"])
    assert all(r["mcp_retry_mb_s"] > 0 for r in results["throughput"])

    streams = results["memory"]["streams"]
    assert all(s["outcome"] == "TOOL_SUCCESS" for s in streams if s["wrapped"])
    history = results["memory"]["history"]
    assert all(m["history_len"] == history["maxlen"] for m in history["marks"])
    assert all(m["resend_entries"] <= 1024 for m in history["marks"])

    retries = results["retry"]
    assert [r["retry"] for r in retries if r["mode"] == "sync"] == [1, 2, 3]
    assert all(r["actual_median_s"] >= r["scheduled_s"] * 0.9 for r in retries)

    assert "Quick (smoke) run" in report
    for heading in ("Headline", "Classifier throughput", "SSE pass-through", "Memory", "Retry"):
        assert heading in report
