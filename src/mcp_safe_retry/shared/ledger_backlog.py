"""What a ``RedisCallLedger`` wrote while Redis did not answer: kept in order (the oldest
dropped past ``CAPACITY``) and sent, in one pipeline, when Redis answers again (a background
thread every ``retry_interval``, a ``flush``, a review). A claim goes as ``SET NX``, so a call
another process wrote meanwhile is never overwritten; a write whose window is over is not
sent."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import redis

from . import ledger_store as store
from .link import RedisLink, Ticker

__all__ = ["CAPACITY", "Backlog"]

CAPACITY = 4096

# (what, key, text, until (the link's monotonic clock)): "claim" (SET NX) and "set" (SET)
# with text the call's JSON; "forget" with text its owner; "resolve" with text "1" or "0".
_Op = tuple[str, str, str, float]
_Run = Callable[[Callable[[redis.Redis], None]], object]


class Backlog:
    """The writes waiting for Redis. ``run`` is the ledger's bounded round trip (None when
    Redis did not answer)."""

    def __init__(self, run: _Run, link: RedisLink, name: str) -> None:
        self._run, self._link = run, link
        self._lock = threading.Lock()
        self._pushing = threading.Lock()
        self._ops: deque[_Op] = deque(maxlen=CAPACITY)
        self._ticker = Ticker(self.push, link.retry_interval, f"mcp-safe-retry ledger {name}")

    def __len__(self) -> int:
        return len(self._ops)

    def add(self, what: str, key: str, text: str, window: float | None = None) -> None:
        until = float("inf") if window is None else self._link.clock() + window
        with self._lock:
            self._ops.append((what, key, text, until))
        self._ticker.ensure_started()

    def clear(self) -> None:
        with self._lock:
            self._ops.clear()

    def flush(self, timeout: float | None) -> None:
        """Send what waits, waiting at most ``timeout`` for a send under way (None: the
        link's timeout); ``0.0`` leaves it to the background thread."""
        if not self._ops:
            return
        if timeout is not None and timeout <= 0:
            self._ticker.wake()
            return
        self.push(self._link.timeout if timeout is None else timeout)

    def push(self, wait: float = -1.0) -> None:
        """Send what waits, in the order it was written (one round trip); kept when Redis
        does not answer."""
        if not self._ops or not self._pushing.acquire(timeout=wait):
            return
        try:
            with self._lock:
                ops, self._ops = list(self._ops), deque(maxlen=CAPACITY)
            at = self._link.clock()
            if self._run(lambda client: self._send(client, ops, at)) is None:
                with self._lock:
                    self._ops = deque(ops + list(self._ops), maxlen=CAPACITY)
        finally:
            self._pushing.release()

    def _send(self, client: redis.Redis, ops: list[_Op], at: float) -> None:
        pipe = client.pipeline(transaction=False)
        forget: Any = self._link.script(store.FORGET)
        resolve: Any = self._link.script(store.RESOLVE)
        for what, key, text, until in ops:
            if what == "forget":
                forget(keys=[key], args=[text], client=pipe)
            elif what == "resolve":
                resolve(keys=[key, key + store.RESOLVED], args=[text], client=pipe)
            elif until > at:
                pipe.set(key, text, px=max(1, round((until - at) * 1000)), nx=what == "claim")
        pipe.execute()

    def stop(self) -> None:
        """Stop the background thread, then send what waits (at most the link's timeout)."""
        self._ticker.stop(self._link.timeout * 2)
        self.push(self._link.timeout)
