"""What the Redis tests share: two servers, a clock moved by hand, a fresh name, and the
round trips a Redis server has served."""

from __future__ import annotations

import time
import uuid

import redis

A = "http://a.test/mcp"
B = "http://b.test/mcp"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.now


def round_trips(client: redis.Redis) -> int:
    """Scripts and commands other clients sent so far (a script's own calls not counted)."""
    stats = client.info("commandstats")
    sent = ("evalsha", "eval", "script|load", "ping")
    return sum(int(stats.get(f"cmdstat_{c}", {}).get("calls", 0)) for c in sent)


def name() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"
