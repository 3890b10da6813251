"""The gateway benchmark in miniature, through its command line (no timed assertion): every
era, size and front gets a row, and the throughput table follows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_gateway_benchmark_runs_and_reports() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.gateway", "--calls", "3", "--rounds", "1",
         "--seconds", "0.3", "--workers", "1", "--concurrency", "2"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| 20")]
    assert len(rows) == 2 * 2 * 3  # eras x sizes x fronts
    for front in ("direct", "forwarder", "gateway"):
        assert sum(f"| {front} |" in row for row in rows) == 4
    assert "| gateway | " in done.stdout.split("Throughput:")[1]
