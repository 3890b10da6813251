"""``mcp-safe-retry ledger list|resolve`` against a real redis-server: the table, JSON, a
person's verdict seen by the ledger, and one line (no traceback) for a bad URL, a dead Redis
and a call that matches nothing or too much."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcp_safe_retry.core.delivery import Delivery
from mcp_safe_retry.core.duplicate import EarlierCall, LedgerState
from mcp_safe_retry.redis import RedisCallLedger
from tests.redis_support import RedisServer
from tests.shared.common import name

ROOT = Path(__file__).resolve().parents[2]
S = "http://pay.test/mcp"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, "-m", "mcp_safe_retry", "ledger", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False, env=env)


def _held(ledger: RedisCallLedger, digest: str, owner: str, state: LedgerState) -> None:
    call = EarlierCall(
        7, time.time() - 75, Delivery.MAY_HAVE_RUN, "", state=LedgerState.IN_FLIGHT,
        tool="charge", owner=owner,
    )  # fmt: skip
    ledger.claim(S, digest, call, 600.0, time.monotonic())
    if state is not LedgerState.IN_FLIGHT:
        ended = EarlierCall(
            7, call.started_at, Delivery.MAY_HAVE_RUN, "NETWORK_ERROR", "read_timeout",
            "no answer in 30 s", state=state, tool="charge", owner=owner,
        )  # fmt: skip
        ledger.settle(S, digest, owner, ended, window=600.0, now=time.monotonic())


def test_list_and_resolve(redis_server: RedisServer) -> None:
    ledger = RedisCallLedger(redis_server.url, name=name())
    first, second = "a1" + "0" * 62, "a2" + "0" * 62
    _held(ledger, first, "h:1:1", LedgerState.MAY_HAVE_RUN)
    _held(ledger, second, "h:1:2", LedgerState.IN_FLIGHT)
    where = ["--redis", redis_server.url, "--name", ledger.name]

    listed = run("list", *where)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0] == f"ledger {ledger.name!r}: 2 call(s) held, 2 in doubt"
    assert lines[1].split() == [
        "SERVER", "TOOL", "DIGEST", "REQUEST", "ID", "STATE", "SENT", "HOW", "IT", "ENDED", "HELD",
    ]  # fmt: skip
    assert "charge" in lines[2] and first[:12] in lines[2] and "may_have_run" in lines[2]
    assert "NETWORK_ERROR (read_timeout): no answer in 30 s" in lines[2]
    assert "(1m15s ago)" in lines[2] or "(1m16s ago)" in lines[2]
    assert "in_flight" in lines[3] and "no answer yet" in lines[3]

    as_json = json.loads(run("list", *where, "--json").stdout)
    assert [(c["digest"], c["state"], c["tool"]) for c in as_json] == [
        (first, "may_have_run", "charge"),
        (second, "in_flight", "charge"),
    ]
    assert as_json[0]["key"].startswith(f"mcp-safe-retry:ledger:{ledger.name}:")

    ran = run("resolve", *where, "a1", "--ran")
    assert ran.returncode == 0 and "ran; held for the rest of its window" in ran.stdout
    assert [e.digest for e in ledger.in_doubt()] == [second]
    gone = run("resolve", *where, as_json[1]["key"], "--did-not-run")
    assert gone.returncode == 0 and "did not run; forgotten" in gone.stdout
    assert ledger.in_doubt() == []
    # The sender's own copy said in flight: the verdict reached it too.
    call = EarlierCall(8, time.time(), Delivery.MAY_HAVE_RUN, "", owner="h:1:3")
    assert ledger.claim(S, second, call, 600.0, time.monotonic()) == (None, "redis")

    nothing = run("resolve", *where, "ffff", "--ran")
    assert nothing.returncode == 1 and "no call in ledger" in nothing.stderr
    both = run("resolve", *where, "a", "--ran")
    assert both.returncode == 1 and "matches 2 calls" in both.stderr
    assert "Traceback" not in nothing.stderr + both.stderr
    assert run("list", "--redis", redis_server.url, "--name", name()).stdout.startswith(
        "ledger 't-"
    )


@pytest.mark.parametrize(
    ("url", "status", "says"),
    [
        pytest.param("http://127.0.0.1:6379", 2, "is not a Redis URL", id="not-redis"),
        pytest.param("redis://127.0.0.1:1/0", 3, "does not answer (ConnectionError", id="dead"),
        pytest.param(
            "redis://me:secret@127.0.0.1:1/0", 3, "redis://me:***@127.0.0.1:1/0", id="password"
        ),
    ],
)
def test_one_line_for_a_bad_url_or_a_dead_redis(url: str, status: int, says: str) -> None:
    done = run("list", "--redis", url, "--timeout", "0.5")
    assert done.returncode == status, done.stderr
    assert says in done.stderr and "secret" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_a_hung_redis_is_a_line_within_the_timeout(redis_server: RedisServer) -> None:
    redis_server.pause()
    try:
        started = time.monotonic()
        done = run("list", "--redis", redis_server.url, "--timeout", "0.5")
        took = time.monotonic() - started
    finally:
        redis_server.resume()
    assert done.returncode == 3 and "does not answer (TimeoutError" in done.stderr
    assert took < 15  # the interpreter's start, then at most about the timeout


def test_the_command_line_itself() -> None:
    no_verdict = run("resolve", "--redis", "redis://127.0.0.1:1/0", "abc")
    assert no_verdict.returncode == 2 and "--ran" in no_verdict.stderr
    assert run("--help").stdout.count("list") >= 1
    top = subprocess.run(
        [sys.executable, "-m", "mcp_safe_retry", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert "ledger" in top.stdout
