"""A worker process of tests/shared/test_flush.py and benchmarks/flush.py: it imports
everything first, then reads one job (a JSON line) on stdin and does it. It sends READ calls
through a retry transport (sync or async) whose ``RedisCircuitBreaker`` it never closes: only
the client is closed, by its ``with`` block, and the process ends; or, with ``kill``, it
sends itself SIGKILL right after a call left its breaker open. It prints one JSON line: how
each call ended."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from typing import Any

import httpx

from mcp_safe_retry import AsyncRetryTransport, RetryPolicy, RetryTransport
from mcp_safe_retry.core.breaker import CircuitState
from mcp_safe_retry.redis import RedisCircuitBreaker

POLICY = RetryPolicy(tools={"lookup": "read"})


def _message(n: int) -> dict[str, Any]:
    params = {"name": "lookup", "arguments": {"n": n}}
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}


def _breaker(job: dict[str, Any]) -> RedisCircuitBreaker:
    return RedisCircuitBreaker(
        job["redis"], name=job["name"], failure_threshold=5, open_for=60, timeout=job["timeout"]
    )


def _after(job: dict[str, Any], breaker: RedisCircuitBreaker, key: str, ended: list[str]) -> None:
    if job["kill"] and breaker.state(key) is CircuitState.OPEN:
        print(json.dumps(ended), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)


def run_sync(job: dict[str, Any]) -> list[str]:
    breaker, ended = _breaker(job), []
    transport = RetryTransport(policy=POLICY, breaker=breaker, sleep=lambda _: None)
    key = transport.engine.server_key(job["url"])
    with httpx.Client(transport=transport, timeout=10) as client:
        for n in range(job["calls"]):
            try:
                ended.append(str(client.post(job["url"], json=_message(n)).status_code))
            except Exception as error:
                ended.append(type(error).__name__)
            _after(job, breaker, key, ended)
    return ended


async def _nap(_: float) -> None:
    return None


async def run_async(job: dict[str, Any]) -> list[str]:
    breaker, ended = _breaker(job), []
    transport = AsyncRetryTransport(policy=POLICY, breaker=breaker, sleep=_nap)
    key = transport.engine.server_key(job["url"])
    async with httpx.AsyncClient(transport=transport, timeout=10) as client:
        for n in range(job["calls"]):
            try:
                answer = await client.post(job["url"], json=_message(n))
                ended.append(str(answer.status_code))
            except Exception as error:
                ended.append(type(error).__name__)
            _after(job, breaker, key, ended)
    return ended


def main() -> None:
    print("ready", flush=True)
    job = json.loads(sys.stdin.readline())
    ended = run_sync(job) if job["mode"] == "sync" else asyncio.run(run_async(job))
    print(json.dumps(ended), flush=True)  # then the interpreter exits: the breaker is open


if __name__ == "__main__":
    main()
