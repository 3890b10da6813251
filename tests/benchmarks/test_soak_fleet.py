"""The fleet soak in miniature, through its command line: two processes, one Redis budget
and breaker (on a redis-server the command starts and stops), the soak's mixed faults and
invariants (the full run: ``python -m benchmarks.soak_fleet``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.redis_support import redis_server_binary

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def test_two_processes_share_one_redis_the_breaker_opens_and_every_invariant_holds() -> None:
    if redis_server_binary() is None:
        pytest.fail(
            "redis-server not found: install it (apt-get install redis-server; "
            "scripts/test.sh does so as root) or set MCP_SAFE_RETRY_REDIS_SERVER"
        )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    argv = ["--workers", "2", "--calls", "160", "--seed", "5", "--timeout", "90", "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.soak_fleet", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    reports = json.loads(done.stdout)
    assert len(reports) == 2
    for report in reports:
        failed = {i["name"]: i["failures"][:3] for i in report["invariants"] if not i["passed"]}
        assert not failed, failed
        assert report["stats"]["calls"] == 80
        charge = report["stats"]["charge"]
        assert charge["maxPerKey"] <= 1  # no duplicate side effect
        held = next(i for i in report["invariants"] if i["name"] == "held_attempts_sent_nothing")
        assert held["passed"] and held["failureCount"] == 0
    breakers = [report["stats"]["breaker"] for report in reports]
    # The mixed faults open the shared breaker, and calls are held while it is open.
    assert sum(b["opens"] for b in breakers) >= 1, breakers
    assert sum(b["heldCalls"] for b in breakers) >= 1, breakers
