"""The benchmark command runs in quick mode and produces sane output (no timed assertion)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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
    httpx2_rows = results["httpx2"] + results["floor_async"]
    assert {"json-1k", "sse-1k"} <= {row["case"] for row in results["httpx2"]}
    assert {row["case"] for row in results["floor_async"]} == {"json-1k", "sse-1k"}
    for row in httpx2_rows:
        assert {"httpx2", "mcp-safe-retry"} <= set(row["contenders"])
        assert row["contenders"]["httpx2"]["ratio"] == 1.0
        assert all(0 < cell["ratio"] < 1000 for cell in row["contenders"].values())
    assert {"hand-on sketch", "sketch, rebuilt Response"} <= set(
        results["floor_async"][0]["contenders"]
    )
    if importlib.util.find_spec("uvicorn") and importlib.util.find_spec("mcp"):
        official = results["official"]
        assert {row["era"] for row in official} == {"2026-07-28", "2025-11-25"}
        for row in official:
            assert row["contenders"]["mcp client"]["ratio"] == 1.0
            assert row["contenders"]["mcp-safe-retry"]["us_per_call"] > 0
            cpu = row["cpu"]  # the client process's CPU time per call, beside the wall time
            assert cpu["mcp client"]["ratio"] == 1.0
            ours = cpu["mcp-safe-retry"]
            assert ours["us_per_call"] > 0
            assert ours["rounds"] == row["contenders"]["mcp-safe-retry"]["rounds"]
            assert 0 < ours["ratio_min"] <= ours["ratio"] <= ours["ratio_max"] < 1000
        assert "Headline: the official MCP client" in report
        assert "Client CPU (official client)" in report
    decoded = results["sse_decoder"]
    assert {row["eol"] for row in decoded} == {"LF", "CRLF", "CR"}
    assert all(c["us_per_stream"] > 0 for row in decoded for c in row["decoders"].values())
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
    for heading in (
        "Headline",
        "floors",
        "httpx2.AsyncClient in process",
        "SSE decoder alone",
        "Classifier throughput",
        "SSE pass-through",
        "Memory",
        "Retry",
    ):
        assert heading in report


def test_official_client_profile_runs_and_reports() -> None:
    """The profile of one official-client call: our code runs only in the wrapped client."""
    if not (importlib.util.find_spec("uvicorn") and importlib.util.find_spec("mcp")):
        return  # the profile needs the official client and a server; nothing to profile
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.profile_official", "--quick"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "=== 2026-07-28, text-1k" in out and "=== 2025-11-25, text-1k" in out
    ours = [line.split() for line in out.splitlines() if line.startswith("  mcp-safe-retry ")]
    assert len(ours) == 2  # one row per era: bare, wrapped, added
    for _, bare, wrapped, added in ours:
        assert float(bare) == 0 and float(wrapped) > 0 and float(added) > 0
    assert "top by cumulative time" in out and "top by self time" in out
    assert "handle_async_request" in out
