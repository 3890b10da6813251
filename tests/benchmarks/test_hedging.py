"""The hedging benchmark runs end to end in a tiny configuration (no timed assertion)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.e2e


def test_hedging_benchmark_counts_posts_and_executions(tmp_path: Path) -> None:
    out = tmp_path / "hedging.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "hedging.py"),
            *("--calls", "6", "--rounds", "2", "--slow-every", "2", "--slow-ms", "60"),
            *("--json", str(out)),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {row["contender"]: row for row in json.loads(out.read_text())}
    row = rows.pop("no hedging")
    assert row["calls"] == 6
    assert row["posts_per_call"] == row["recorded_posts_per_call"] == 1.0
    assert row["executions_per_call"] == 1.0 and row["tool_errors"] == 0
    assert row["p50_ms"] <= row["p95_ms"] <= row["p99_ms"] <= row["max_ms"]
    assert row["p99_ratio"] == 1.0
    assert "p99 ms" in done.stdout
    assert set(rows) == {
        "hedge 50 ms",
        "hedge 50 ms, 2 hedges",
        "hedge adaptive p95",
        "hedge adaptive p90",
        "hedge adaptive p80",
    }
    for name, hedged in rows.items():
        cap = 3 if name == "hedge 50 ms, 2 hedges" else 2
        assert hedged["calls"] == 6 and hedged["tool_errors"] == 0, name
        # A copy cancelled before it left may never reach the kitchen: records count it.
        assert 1.0 <= hedged["posts_per_call"] <= hedged["recorded_posts_per_call"] <= cap
