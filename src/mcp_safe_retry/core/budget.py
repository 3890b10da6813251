"""Retry budgets: how many retries a transport (or a fleet of them) may send.

The default, ``RetryBudget``, has the shape of AWS's standard retry quota: a fixed burst
allowance of ``burst`` retries, then one retry for every ``1 / per_success`` attempts that
reached a working server. A retry spends one token; a healthy attempt gives back
``per_success`` of one (never above ``burst``); a failed attempt costs nothing by itself.

The bound: over any stretch of time in which S attempts reached a working server, the retries
sent are at most ``burst + per_success * S``. Under a total outage S is 0, so N calls with
``max_retries`` r send at most ``N + min(r * N, burst)`` POSTs, whatever came before (the
bucket never holds more than ``burst``). With the defaults (100, 0.2) and r = 2: 1,000 calls
into an outage cost at most 1,100 POSTs, and a burst of 50 calls that each meet one failure
is retried in full.

``GrpcBudget`` (``RetryBudget.grpc()``) keeps gRPC retry throttling for those who want it:
failures take tokens, healthy attempts give back a fraction, retries stop once half are gone.

Which method a shell calls:
- after every attempt of a call with a JSON-RPC id, sync and async shells alike call
  ``record(failed=...)``; it never blocks (a shared budget batches it);
- before a retry, a sync shell calls ``allow_retry()``; an async shell awaits
  ``allow_retry_async()``. A shared budget may make one bounded round trip there, which the
  async variant never makes on the event loop;
- when a retry or a hedge the budget allowed is not sent after all (the circuit breaker
  held it back), the call gives its token back: ``refund()``, which never blocks.
"""

from __future__ import annotations

import functools
import math
import threading
from typing import Protocol, runtime_checkable

from .live import Live

__all__ = ["EPSILON", "Budget", "GrpcBudget", "RetryBudget", "answers_inline"]

EPSILON = 1e-9
"""Slack for sums of fractions: five successes at 0.2 earn a whole retry."""


@runtime_checkable
class Budget(Protocol):
    """What the shells need from a budget; ``mcp_safe_retry.redis.RedisBudget`` implements
    the same three methods over shared storage. A budget that also has ``refund()`` gets
    back the token of a retry or hedge it allowed that was then not sent. A budget says
    itself how it is asked (``answers_inline``, see ``answers_inline()``): True, the call asks
    it itself; else (and when it does not say) the shell asks it, awaiting it if async."""

    def record(self, *, failed: bool) -> None:
        """One attempt ended: ``failed`` when it was a transient failure. Never blocks."""

    def allow_retry(self) -> bool:
        """May one more retry be sent now? Called by sync shells; a True answer spends it."""

    async def allow_retry_async(self) -> bool:
        """The same answer for async shells, awaited: never blocks the event loop."""


def _positive(name: str, value: float) -> float:
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0")
    return float(value)


class RetryBudget(Live):
    """A retry quota shared by every call of one or more transports (thread- and task-safe).

    Shared, never copied: ``copy.deepcopy`` returns this budget. Pickled and loaded in
    another process, it is a fresh, full budget of the same size there (to share one across
    processes, use ``mcp_safe_retry.redis.RedisBudget``).

    Args:
        burst: retries that may be sent with no success in between (and the most the
            bucket holds); AWS's standard quota allows 100 (500 tokens at 5 a retry).
        per_success: retries earned back by each attempt that reached a working server
            (0.2: one retry per five successes).
    """

    answers_inline = True
    """This process's own: it answers at once, so a call asks it itself (never awaited)."""

    def __init__(self, burst: float = 100.0, per_success: float = 0.2) -> None:
        self.burst = _positive("burst", burst)
        self.per_success = _positive("per_success", per_success)
        if self.burst < 1:
            raise ValueError("burst must be at least 1 (one retry's worth)")
        self._tokens = self.burst
        self._lock = threading.Lock()  # held for a few instructions, never across an await

    @classmethod
    def grpc(cls, max_tokens: float = 10.0, token_ratio: float = 0.1) -> GrpcBudget:
        """gRPC-style retry throttling (see ``GrpcBudget``)."""
        return GrpcBudget(max_tokens, token_ratio)

    @property
    def tokens(self) -> float:
        """Retries that may be sent now (fractions accumulate from successes)."""
        return self._tokens

    def record(self, *, failed: bool) -> None:
        if failed or self._tokens >= self.burst:  # a failure costs when it is retried
            return
        with self._lock:
            self._tokens = min(self.burst, self._tokens + self.per_success)

    def allow_retry(self) -> bool:
        with self._lock:
            if self._tokens < 1.0 - EPSILON:
                return False
            self._tokens = max(0.0, self._tokens - 1.0)
            return True

    async def allow_retry_async(self) -> bool:
        return self.allow_retry()

    def refund(self) -> None:
        """Give back the token of a retry ``allow_retry`` granted that was not sent (never
        above ``burst``)."""
        with self._lock:
            self._tokens = min(self.burst, self._tokens + 1.0)

    def __repr__(self) -> str:
        return f"RetryBudget(tokens={self._tokens:.2f}/{self.burst:g})"

    def _recipe(self) -> functools.partial[RetryBudget]:
        return functools.partial(RetryBudget, self.burst, self.per_success)


class GrpcBudget(Live):
    """gRPC retry throttling: retries stop while failures dominate (thread- and task-safe).

    Shared and pickled as ``RetryBudget`` is.

    Each transient failure takes a token; each attempt that reached a working server gives
    back ``token_ratio`` of one. Retries are allowed while more than half the tokens remain.

    Args:
        max_tokens: size of the bucket (gRPC's default is 10).
        token_ratio: tokens given back by a healthy attempt (gRPC's example uses 0.1).
    """

    answers_inline = True
    """This process's own: it answers at once, so a call asks it itself (never awaited)."""

    def __init__(self, max_tokens: float = 10.0, token_ratio: float = 0.1) -> None:
        self.max_tokens = _positive("max_tokens", max_tokens)
        self.token_ratio = _positive("token_ratio", token_ratio)
        if self.token_ratio > self.max_tokens:
            raise ValueError("token_ratio must be in (0, max_tokens]")
        self._tokens = self.max_tokens
        self._lock = threading.Lock()

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

    async def allow_retry_async(self) -> bool:
        return self.allow_retry()

    def refund(self) -> None:
        """Nothing to give back: allowing a retry takes no token here."""

    def __repr__(self) -> str:
        return f"GrpcBudget(tokens={self._tokens:.2f}/{self.max_tokens:g})"

    def _recipe(self) -> functools.partial[GrpcBudget]:
        return functools.partial(GrpcBudget, self.max_tokens, self.token_ratio)


def answers_inline(budget_or_breaker: object) -> bool:
    """Whether a budget or a breaker answers at once (its ``answers_inline`` says so), so a
    call asks it itself; one that does not say is asked by the shell, as a shared one."""
    return getattr(budget_or_breaker, "answers_inline", False) is True
