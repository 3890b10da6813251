"""The kitchen handle, its control endpoints, Host checks and the `python -m` entry."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from kitchen_wire import (
    StartKitchen,
    call_tool,
    legacy_handshake,
    legacy_headers,
    modern_body,
    modern_headers,
)

from mcp_safe_retry.kitchen import KitchenServer, ScenarioError

pytestmark = pytest.mark.e2e

SRC = Path(__file__).resolve().parents[2] / "src"


def test_lifecycle_and_urls() -> None:
    kitchen = KitchenServer()
    with pytest.raises(RuntimeError, match="not started"):
        _ = kitchen.url
    with kitchen:
        assert kitchen.url == f"http://127.0.0.1:{kitchen.port}/mcp"
        assert kitchen.url_for("rate_limit", {"times": 2}, run="r1") == (
            f"{kitchen.url}?scenario=rate_limit&params=%7B%22times%22%3A2%7D&run=r1"
        )
        with pytest.raises(RuntimeError, match="starts once"):
            kitchen.start()
    kitchen.stop()  # a second stop is harmless
    with pytest.raises(httpx.ConnectError), httpx.Client(timeout=2) as client:
        client.get(kitchen.base_url + "/kitchen/state")


def test_invalid_default_scenario_fails_in_the_caller() -> None:
    with pytest.raises(ScenarioError, match="unknown params"):
        KitchenServer("rate_limit", {"tims": 1})


def test_invalid_url_scenario_is_a_400(kitchen: KitchenServer) -> None:
    with httpx.Client(timeout=5) as client:
        response = call_tool(client, kitchen.url_for("malformed", {"kind": "nope"}), "lookup", {})
    assert response.status_code == 400
    assert "one of" in response.json()["error"]


def test_runs_are_isolated_and_state_is_served(kitchen: KitchenServer) -> None:
    first = kitchen.url_for("errors.tool_error", {})
    second = kitchen.url_for("errors.tool_error", {})
    with httpx.Client(timeout=5) as client:
        a = call_tool(client, first, "charge", {"key": "k", "amount": 1})
        b = call_tool(client, second, "charge", {"key": "k", "amount": 1})
        c = call_tool(client, first, "charge", {"key": "k", "amount": 1})
        run = first.rpartition("run=")[2]
        served = client.get(f"{kitchen.base_url}/kitchen/state", params={"run": run}).json()
        everything = client.get(f"{kitchen.base_url}/kitchen/state").json()
        names = client.get(f"{kitchen.base_url}/kitchen/scenarios").json()["scenarios"]
        unknown = client.get(f"{kitchen.base_url}/kitchen/nothing")
    # Each run's first call is its own "first invocation".
    assert [r.json()["result"]["isError"] for r in (a, b, c)] == [True, True, False]
    assert served["executions"] == {"charge": 1}
    assert served["executionsByKey"] == {"charge": {"k": 1}}
    assert [(p["id"], p["fault"], p["status"]) for p in served["posts"]] == [
        (1, "tool_error", 200),
        (1, None, 200),
    ]
    assert served["posts"][0] == {
        "seq": 1,
        "run": run,
        "scenario": "errors.tool_error",
        "method": "tools/call",
        "id": 1,
        "tool": "charge",
        "status": 200,
        "fault": "tool_error",
        "sessionId": None,
        "protocolVersion": "2026-07-28",
        "key": "k",
        "cancelledId": None,
    }
    assert len(everything["posts"]) == 3
    assert "connection_abort" in names
    assert unknown.status_code == 404
    assert kitchen.state_of(first).executions == {"charge": 1}


def test_a_cancellation_is_logged_with_the_id_it_names(kitchen: KitchenServer) -> None:
    url = kitchen.url_for("errors.tool_error", {})
    with httpx.Client(timeout=5) as client:
        session = legacy_handshake(client, url)
        for named in (7, "hedge-1"):
            cancel = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": named, "reason": "test"},
            }
            client.post(url, json=cancel, headers=legacy_headers(session)).raise_for_status()
    posts = kitchen.state_of(url).posts
    assert [(p.method, p.cancelled_id) for p in posts] == [
        ("initialize", None),
        ("notifications/initialized", None),
        ("notifications/cancelled", 7),
        ("notifications/cancelled", "hedge-1"),
    ]


def test_reset_forgets_runs_and_records(kitchen: KitchenServer) -> None:
    url = kitchen.url_for("errors.tool_error", {}, run="again")
    with httpx.Client(timeout=5) as client:
        assert call_tool(client, url, "lookup", {"key": "a"}).json()["result"]["isError"]
        assert client.post(f"{kitchen.base_url}/kitchen/reset").json() == {"reset": True}
        assert kitchen.state.posts == ()
        # The run starts over: its first call is hit again.
        assert call_tool(client, url, "lookup", {"key": "a"}).json()["result"]["isError"]
        kitchen.reset()
    assert kitchen.state.executions == {}


def test_log_limit_drops_the_oldest(start_kitchen: StartKitchen) -> None:
    kitchen = start_kitchen(log_limit=2)
    with httpx.Client(timeout=5) as client:
        for request_id in (1, 2, 3):
            call_tool(client, kitchen.url, "lookup", {"key": "a"}, request_id=request_id)
    assert [p.request_id for p in kitchen.state.posts] == [2, 3]
    assert kitchen.state.posts_dropped == 1
    assert kitchen.state.executions == {"lookup": 3}


@pytest.mark.parametrize(
    ("host", "status"),
    [
        pytest.param(None, 200, id="host-with-port"),
        pytest.param("127.0.0.1", 200, id="host-without-port"),
        pytest.param("localhost", 200, id="localhost-without-port"),
        pytest.param("attacker.example:80", 421, id="foreign-host"),
    ],
)
def test_dns_rebinding_protection_fits_loopback(
    kitchen: KitchenServer, host: str | None, status: int
) -> None:
    headers = modern_headers("tools/list")
    if host is not None:
        headers["host"] = host
    with httpx.Client(timeout=5) as client:
        response = client.post(kitchen.url, json=modern_body(1, "tools/list"), headers=headers)
    assert response.status_code == status


def test_module_entry_prints_its_url_and_serves() -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    args = ["--port", "0", "--scenario", "errors.tool_error", "--params", '{"tool": "charge"}']
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_safe_retry.kitchen", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 15)
        assert ready, "the kitchen printed no URL"
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/mcp")
        with httpx.Client(timeout=5) as client:
            looked_up = call_tool(client, url, "lookup", {"key": "a"})
            charged = call_tool(client, url, "charge", {"key": "k", "amount": 1})
        assert looked_up.json()["result"]["isError"] is False
        assert charged.json()["result"]["isError"] is True
    finally:
        process.terminate()  # SIGTERM to the pid we started
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    # uvicorn shuts down gracefully, then re-raises the signal it caught.
    assert process.returncode == -signal.SIGTERM


def test_module_entry_rejects_bad_params() -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-m", "mcp_safe_retry.kitchen", "--scenario", "nope"],
        capture_output=True,
        env=env,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert "unknown scenario" in done.stderr
