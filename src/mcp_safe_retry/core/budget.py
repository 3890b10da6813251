"""A retry budget in the style of gRPC retry throttling: retries stop while failures dominate.

Each attempt that ends in a transient failure takes a token; each attempt that reached a
working server gives back ``token_ratio`` of one. Retries are allowed only while more than
half the tokens remain. Under a total outage the bucket drains after a few attempts and every
later call is sent once: POSTs stay at the number of calls plus a small constant instead of
``max_retries + 1`` times it.
"""

from __future__ import annotations

import math
import threading
from typing import Protocol, runtime_checkable

__all__ = ["Budget", "RetryBudget"]


@runtime_checkable
class Budget(Protocol):
    """What the engine needs from a budget; a fleet-wide budget can implement the same two
    methods over shared storage. Both must be quick and must not block on I/O."""

    def record(self, *, failed: bool) -> None:
        """One attempt ended: ``failed`` when it was a transient failure."""

    def allow_retry(self) -> bool:
        """May one more retry be sent now?"""


class RetryBudget:
    """A token bucket shared by every call of one or more transports (thread- and task-safe).

    Args:
        max_tokens: size of the bucket (gRPC's default is 10).
        token_ratio: tokens given back by a healthy attempt (gRPC's example uses 0.1).
    """

    def __init__(self, max_tokens: float = 10.0, token_ratio: float = 0.1) -> None:
        if not (math.isfinite(max_tokens) and max_tokens > 0):
            raise ValueError("max_tokens must be a finite number > 0")
        if not (math.isfinite(token_ratio) and 0 < token_ratio <= max_tokens):
            raise ValueError("token_ratio must be in (0, max_tokens]")
        self.max_tokens = float(max_tokens)
        self.token_ratio = float(token_ratio)
        self._tokens = float(max_tokens)
        self._lock = threading.Lock()  # held for a few instructions, never across an await

    @property
    def tokens(self) -> float:
        return self._tokens

    def record(self, *, failed: bool) -> None:
        if not failed and self._tokens >= self.max_tokens:  # full already: nothing to add
            return
        with self._lock:
            if failed:
                self._tokens = max(0.0, self._tokens - 1.0)
            else:
                self._tokens = min(self.max_tokens, self._tokens + self.token_ratio)

    def allow_retry(self) -> bool:
        with self._lock:
            return self._tokens > self.max_tokens / 2

    def __repr__(self) -> str:
        return f"RetryBudget(tokens={self._tokens:.2f}/{self.max_tokens:g})"
