"""Recent latencies per server, and the hedge delay read from them: pure, thread-safe state.

An adaptive hedge (``AdaptiveDelay``) waits for a running quantile of the server's own recent
latencies. The engine feeds ``Latencies`` one sample per call (``Race.sample``), keyed by
``server_key``, and reads ``hedge_delay`` when a call starts. Updates are cheap enough for the
success path: one float stored under a lock, a sort of the window every ``refresh`` samples.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

from .policy import AdaptiveDelay
from .servers import server_key

__all__ = ["Latencies", "LatencyWindow", "hedge_delay", "server_key"]


class LatencyWindow:
    """The last ``size`` latencies of one server, with quantiles refreshed every ``refresh``
    samples (thread-safe).

    Adding a sample stores one float under a lock; every ``refresh`` samples the window is
    copied and sorted (``size`` floats, outside the lock). Reading a quantile indexes the
    last sorted copy without a lock. Memory: two lists of ``size`` floats.
    """

    def __init__(self, size: int = 256, refresh: int = 16) -> None:
        if size < 1 or not 1 <= refresh <= size:
            raise ValueError("need size >= 1 and 1 <= refresh <= size")
        self.size = size
        self.refresh = refresh
        self._ring = [0.0] * size
        self._count = 0
        self._sorted: list[float] = []
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        """Samples added so far (not all of them still in the window)."""
        return self._count

    def add(self, seconds: float) -> None:
        """Add one latency; a negative or non-finite value is ignored."""
        if not (math.isfinite(seconds) and seconds >= 0):
            return
        with self._lock:
            self._ring[self._count % self.size] = seconds
            self._count += 1
            if self._count % self.refresh:
                return
            window = self._ring[: min(self._count, self.size)]
        window.sort()
        self._sorted = window  # one reference store: readers see the old or the new list

    def quantile(self, q: float, min_samples: int = 1) -> float | None:
        """The ``q`` quantile (nearest rank) of the last refreshed window; None while it
        holds fewer than ``min_samples`` latencies."""
        ordered = self._sorted
        n = len(ordered)
        if n < max(1, min_samples):
            return None
        rank = min(n, max(1, math.ceil(q * n)))
        return ordered[rank - 1]


class Latencies:
    """A ``LatencyWindow`` per server (``server_key``), the least recently used dropped past
    ``max_servers`` (thread-safe)."""

    def __init__(self, size: int = 256, refresh: int = 16, max_servers: int = 64) -> None:
        LatencyWindow(size, refresh)  # validate now
        if max_servers < 1:
            raise ValueError("max_servers must be >= 1")
        self._size, self._refresh, self._max = size, refresh, max_servers
        self._windows: OrderedDict[str, LatencyWindow] = OrderedDict()
        self._lock = threading.Lock()

    def window(self, server: str) -> LatencyWindow | None:
        """The server's window, if it has one."""
        with self._lock:
            return self._windows.get(server)

    def add(self, server: str, seconds: float) -> None:
        """Add one latency of ``server``."""
        with self._lock:
            window = self._windows.get(server)
            if window is None:
                window = self._windows[server] = LatencyWindow(self._size, self._refresh)
                while len(self._windows) > self._max:
                    self._windows.popitem(last=False)
            else:
                self._windows.move_to_end(server)
        window.add(seconds)


def hedge_delay(
    hedge_after: float | AdaptiveDelay | None, window: LatencyWindow | None
) -> float | None:
    """Seconds a call waits before its first hedge: the fixed delay, or the adaptive one
    read from the server's window (``initial`` until enough latencies are known)."""
    if not isinstance(hedge_after, AdaptiveDelay):
        return hedge_after
    seen = (
        None if window is None else window.quantile(hedge_after.quantile, hedge_after.min_samples)
    )
    return hedge_after.clamp(hedge_after.initial if seen is None else seen)
