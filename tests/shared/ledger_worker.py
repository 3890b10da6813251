"""A worker process of the Redis call ledger tests (``python -m tests.shared.ledger_worker``).

race REDIS NAME CALLS [reversed]
                          wait for the test's go (a Redis list), claim CALLS calls (the
                          last first if reversed: two workers meet in the middle), print
                          one JSON line: [[digest, won, decided_by], ...] in call order
charge REDIS NAME SERVER  send one UNSAFE ``charge`` through a RetryTransport sharing
                          the ledger, printing "sent" once the claim is in Redis (the
                          test then kills this process with SIGKILL)
load                      a pickled RedisCallLedger on stdin: claim one call, print
                          [won, decided_by, owner found]
"""

from __future__ import annotations

import json
import pickle
import sys
import time

import httpx
import redis

from mcp_safe_retry import RetryPolicy, RetryTransport
from mcp_safe_retry.core.delivery import Delivery
from mcp_safe_retry.core.duplicate import EarlierCall, LedgerState
from mcp_safe_retry.redis import RedisCallLedger
from mcp_safe_retry.shared.ledgers import process_name

SERVER = "http://pay.test/mcp"


def call(owner: str) -> EarlierCall:
    return EarlierCall(
        1, time.time(), Delivery.MAY_HAVE_RUN, "", state=LedgerState.IN_FLIGHT, owner=owner
    )


def _race(url: str, name: str, calls: int, order: str = "") -> None:
    ledger = RedisCallLedger(url, name=name)
    with redis.Redis.from_url(url) as client:
        client.rpush(f"{name}:ready", process_name())
        client.blpop([f"{name}:go:{process_name()}"], timeout=20)
    out = []
    for n in reversed(range(calls)) if order == "reversed" else range(calls):
        found, decided_by = ledger.claim(
            SERVER, f"d{n}", call(f"{process_name()}:{n}"), 600.0, time.monotonic()
        )
        out.append([f"d{n}", found is None, decided_by])
    print(json.dumps(sorted(out, key=lambda row: int(row[0][1:]))), flush=True)


def _charge(url: str, name: str, server: str) -> None:
    ledger = RedisCallLedger(url, name=name)
    policy = RetryPolicy(tools={"lookup": "read"})
    with httpx.Client(
        transport=RetryTransport(httpx.HTTPTransport(), policy=policy, ledger=ledger)
    ) as client:
        body = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "charge", "arguments": {"amount": 100}},
        }
        print("sending", flush=True)
        client.post(server, json=body, timeout=30)


def _load() -> None:
    ledger = pickle.loads(sys.stdin.buffer.read())
    found, decided_by = ledger.claim(
        SERVER, "pickled", call(f"{process_name()}:1"), 600.0, time.monotonic()
    )
    print(json.dumps([found is None, decided_by, None if found is None else found.owner]))


if __name__ == "__main__":
    what, *args = sys.argv[1:]
    if what == "race":
        _race(args[0], args[1], int(args[2]), *args[3:])
    elif what == "charge":
        _charge(*args)
    else:
        _load()
