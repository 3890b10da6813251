"""``mcp-safe-retry gateway``: what it refuses to start with, and a real one serving."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from mcp_safe_retry.gateway._config import ConfigError, policy_from
from mcp_safe_retry.kitchen import KitchenServer
from mcp_safe_retry.policy import DuplicateGuard
from mcp_safe_retry.records import Outcome
from tests.gateway_support import gateway_process
from tests.redis_support import RedisServer

UPSTREAM = "http://127.0.0.1:9/mcp"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mcp_safe_retry", "gateway", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        pytest.param(
            ["--host", "0.0.0.0"], "not a loopback address: add --allow-remote", id="remote"
        ),
        pytest.param(
            ["--host", "0.0.0.0", "--allow-remote"], "needs --client-token", id="remote-no-token"
        ),
        pytest.param(["--port", "99999"], "is not a TCP port", id="port"),
        pytest.param(["--client-token", ""], "must not be empty", id="empty-token"),
        pytest.param(["--max-body", "0"], "--max-body must be positive", id="body"),
    ],
)
def test_it_refuses_to_start_unsafely(args: list[str], says: str) -> None:
    done = run("--upstream", UPSTREAM, *args)
    assert done.returncode == 2 and says in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_bad_upstream_or_config_is_one_clear_line(tmp_path: Path) -> None:
    bad = run("--upstream", "ftp://x/mcp")
    assert bad.returncode == 2 and "must be an http(s) URL" in bad.stderr
    config = tmp_path / "policy.toml"
    config.write_text("max_retries = 2\nretries = 3\n")
    unknown = run("--upstream", UPSTREAM, "--config", str(config))
    assert unknown.returncode == 2 and "unknown setting(s) retries" in unknown.stderr
    assert "Traceback" not in bad.stderr + unknown.stderr


def test_the_policy_from_a_file_and_flags(tmp_path: Path) -> None:
    config = tmp_path / "policy.toml"
    config.write_text(
        'max_retries = 1\nretry_statuses = [503]\nduplicate_guard = "label"\n'
        'hedge_after = 0.05\n[tools]\n"search_*" = "read"\ncharge = "unsafe"\n'
    )
    policy = policy_from(config, read=["lookup"], idempotent=["set_*"], trust_annotations=True)
    assert policy.max_retries == 1 and policy.retry_statuses == frozenset({503})
    assert policy.duplicate_guard is DuplicateGuard.LABEL and policy.hedge_after == 0.05
    assert policy.trust_annotations
    assert {k: str(v) for k, v in policy.tools.items()} == {
        "search_*": "read", "charge": "unsafe", "lookup": "read", "set_*": "idempotent"
    }  # fmt: skip
    config.write_text("max_retries = -1\n")
    with pytest.raises(ConfigError, match="max_retries"):
        policy_from(config)
    config.write_text("max_retries = \n")
    with pytest.raises(ConfigError, match="is not TOML"):
        policy_from(config)


def test_a_gateway_process_serves_and_records(tmp_path: Path) -> None:
    with KitchenServer() as kitchen:
        records = tmp_path / "calls.jsonl"
        flags = ("--read", "lookup", "--metrics", "--otel")
        with gateway_process(kitchen.url, records, *flags) as gateway:
            assert gateway.url.startswith("http://127.0.0.1:") and gateway.url.endswith("/mcp")
            health = httpx.get(gateway.url.replace("/mcp", "/healthz"), timeout=10)
            assert health.status_code == 200 and health.json()["status"] == "ok"
            headers = {"accept": "application/json, text/event-stream"}
            body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            answered = httpx.post(gateway.url, json=body, headers=headers, timeout=10)
            # The kitchen's 400 (no session) as the JSON-RPC error of this request: the
            # httpx transport contains final HTTP errors so, for every client alike.
            assert answered.status_code == 200 and answered.json()["id"] == 1
            assert "error" in answered.json()
            metrics = httpx.get(gateway.url.replace("/mcp", "/metrics"), timeout=10)
            assert metrics.headers["content-type"].startswith("text/plain")
            assert "mcp_safe_retry_attempts_total{" in metrics.text
            assert 'mcp_method_name="ping"' in metrics.text
    (line,) = records.read_text().splitlines()  # the ping; the health probe is not a call
    record = json.loads(line)
    # The kitchen's 400 carries a JSON-RPC error for the request: that error, its status kept.
    assert record["method"] == "ping" and record["outcome"] == Outcome.JSONRPC_ERROR
    assert record["httpStatuses"] == [400] and record["layer"] == "protocol"


def test_with_redis_the_fleet_shares_the_budget(tmp_path: Path, redis_server: RedisServer) -> None:
    """``--redis``: a retry asks the fleet's budget, in the redis-server the test started."""
    import redis

    with KitchenServer() as kitchen:
        codes = {"statusCodes": [503, 200], "method": "ping"}
        url = kitchen.url_for("errors.http_status_sequence", codes)
        flags = ("--redis", redis_server.url, "--fleet", "gw-test")
        with gateway_process(kitchen.url, tmp_path / "calls.jsonl", *flags) as gateway:
            body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            headers = {"accept": "application/json, text/event-stream"}
            httpx.post(gateway.url_for(url), json=body, headers=headers, timeout=30)
    assert [p.status for p in kitchen.state_of(url).posts] == [503, 400]  # retried once
    keys = redis.Redis.from_url(redis_server.url).keys("mcp-safe-retry:{gw-test}:*")
    assert keys  # the budget the retry spent from lives in Redis


def test_with_redis_two_gateways_hold_each_others_re_sends(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """``--redis`` shares the call ledger: a charge that may have run through one gateway
    (the kitchen ran it, then the connection dropped) is held when a client sends it again
    through another gateway of the fleet; the kitchen ran it once."""
    from tests.e2e.ledger_support import ABORT_AFTER, modern_call, modern_headers

    with KitchenServer() as kitchen:
        url = kitchen.url_for(*ABORT_AFTER)
        flags = ("--redis", redis_server.url, "--fleet", "gw-ledger")
        body = modern_call(1, "charge", {"key": "g", "amount": 1})
        with (
            gateway_process(kitchen.url, tmp_path / "a.jsonl", *flags) as first,
            gateway_process(kitchen.url, tmp_path / "b.jsonl", *flags) as second,
        ):
            dropped = httpx.post(
                first.url_for(url), json=body, headers=modern_headers("charge"), timeout=30
            )
            again = httpx.post(
                second.url_for(url),
                json={**body, "id": 2},
                headers=modern_headers("charge"),
                timeout=30,
            )
        runs = kitchen.state_of(url).executions_by_key.get("charge", {})
    assert runs == {"g": 1}, f"the tool ran {runs} times"
    assert dropped.json()["error"]["data"]["outcome"] == "NETWORK_ERROR"
    held = again.json()["error"]["data"]
    assert held["outcome"] == "DUPLICATE_HELD" and held["duplicateOf"]["ledger"] == "redis"
