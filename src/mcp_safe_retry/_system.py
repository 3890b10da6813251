"""What the package takes from the system for the objects a user builds by hand, outside the
pure core (which reads no clock and draws no randomness of its own): ``CircuitBreaker``, the
core's ``Circuits`` with its settings spelled out and the monotonic clock by default, and the
random tokens a pickled shared object is known by (``core.live``). A transport takes its
calls' clocks and randomness from its shell."""

from __future__ import annotations

import functools
import secrets
import time
from collections.abc import Callable

import attrs

from .core.breaker import BreakerSettings, Circuits
from .core.live import draw_tokens_from

__all__ = ["CircuitBreaker"]

draw_tokens_from(functools.partial(secrets.token_hex, 16))


class CircuitBreaker(Circuits):
    """Circuits for many servers in one process (thread- and task-safe).

    Shared, never copied: ``copy.deepcopy`` returns this breaker. Pickled and loaded in
    another process, it is a fresh one there, every circuit closed, with the same settings
    (to share circuits across processes, use ``mcp_safe_retry.redis.RedisCircuitBreaker``).

    Args:
        failure_threshold: failed attempts in a row that open a circuit.
        failure_ratio: share of calls in the window that ended failed (after their
            retries) that opens it...
        min_calls: ...once at least this many calls ended in the window.
        window: seconds the ratio looks back.
        open_for: seconds a circuit stays open before probing.
        max_open_for: the longest a Retry-After may hold it open.
        probes: requests let through at once while half-open.
        clock: monotonic seconds (injectable, so tests never wait).
        max_servers: circuits kept; the least recently used is forgotten beyond that.
    """

    def __init__(
        self,
        *,
        failure_threshold: int = 5,
        failure_ratio: float = 0.5,
        min_calls: int = 20,
        window: float = 30.0,
        open_for: float = 30.0,
        max_open_for: float = 300.0,
        probes: int = 1,
        clock: Callable[[], float] = time.monotonic,
        max_servers: int = 1024,
    ) -> None:
        settings = BreakerSettings(
            failure_threshold=failure_threshold,
            failure_ratio=failure_ratio,
            min_calls=min_calls,
            window=window,
            open_for=open_for,
            max_open_for=max_open_for,
            probes=probes,
        )
        super().__init__(settings, clock=clock, max_servers=max_servers)

    def _recipe(self) -> functools.partial[CircuitBreaker]:
        return functools.partial(
            CircuitBreaker,
            **attrs.asdict(self.settings),
            clock=self.clock,
            max_servers=self.max_servers,
        )
