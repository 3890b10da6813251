"""Recent latencies per server, and the hedge delay read from them: pure, thread-safe state.

An adaptive hedge (``AdaptiveDelay``) waits for a running quantile of the server's own recent
latencies. The engine feeds ``Latencies`` the samples of each settled call (``Race.samples``:
every copy's own latency, censored for a copy cancelled unanswered), keyed by ``server_key``,
and reads ``hedge_delay`` when a call starts. Updates are cheap enough for the success path:
one float stored under a lock, a sort of the window every ``refresh`` samples.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections import OrderedDict
from typing import NamedTuple

from .hedge_settings import AdaptiveDelay
from .servers import server_key

__all__ = ["Latencies", "LatencyWindow", "hedge_delay", "server_key"]


class LatencyWindow:
    """The last ``size`` latencies of one server, some of them censored, with quantiles
    refreshed every ``refresh`` samples (thread-safe).

    A censored latency is a lower bound: a copy cancelled after ``T`` seconds without an
    answer only says its answer would have taken ``>= T``. Dropping those would leave out
    exactly the slow copies and sink the quantile; counting them as answers at ``T`` would
    drag it toward the hedge's own delay. The quantile is read from the Kaplan-Meier
    estimate of the latency distribution, which counts a censored latency as ``>= T``;
    without censored latencies it is the nearest-rank quantile.

    Adding a sample stores one float and one flag under a lock; every ``refresh`` samples
    the window is copied, sorted and turned into its estimate (``O(size log size)``,
    outside the lock). Reading a quantile bisects the last estimate without a lock.
    Memory: a few lists of ``size`` items.
    """

    def __init__(self, size: int = 256, refresh: int = 16) -> None:
        if size < 1 or not 1 <= refresh <= size:
            raise ValueError("need size >= 1 and 1 <= refresh <= size")
        self.size = size
        self.refresh = refresh
        self._ring = [0.0] * size
        self._censored = [False] * size
        self._count = 0
        self._estimate = _Estimate((), (), 0, 0.0)
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        """Samples added so far (not all of them still in the window)."""
        return self._count

    def add(self, seconds: float, *, censored: bool = False) -> None:
        """Add one latency (``censored``: only known to be ``>= seconds``); a negative or
        non-finite value is ignored."""
        if not (math.isfinite(seconds) and seconds >= 0):
            return
        with self._lock:
            slot = self._count % self.size
            self._ring[slot] = seconds
            self._censored[slot] = censored
            self._count += 1
            if self._count % self.refresh:
                return
            n = min(self._count, self.size)
            window = list(zip(self._ring[:n], self._censored[:n], strict=True))
        self._estimate = _estimate(window)  # one reference store: readers see old or new

    def quantile(self, q: float, min_samples: int = 1) -> float | None:
        """The ``q`` quantile of the last refreshed window; None while it holds fewer than
        ``min_samples`` latencies.

        When censored latencies leave the estimate short of ``q`` (copies were cancelled
        later than the last answer came, none answered after), the quantile is only known
        to lie past the last answer, and the last answer is read: a hedge delay then waits
        as long as any answer it has seen, no longer (with nothing answered, the largest
        censored latency)."""
        estimate = self._estimate
        if estimate.samples < max(1, min_samples):
            return None
        i = bisect.bisect_left(estimate.shares, q - _SLACK)
        if i < len(estimate.values):
            return estimate.values[i]
        return estimate.values[-1] if estimate.values else estimate.largest


_SLACK = 1e-9  # products of (1 - 1/n) drift from k/n by a few ulps


class _Estimate(NamedTuple):
    """A window's latency distribution: the answered latencies in order, with the share of
    answers expected at or below each (non-decreasing)."""

    values: tuple[float, ...]
    shares: tuple[float, ...]
    samples: int
    largest: float


def _estimate(window: list[tuple[float, bool]]) -> _Estimate:
    """The Kaplan-Meier estimate of ``window`` (latency, censored) pairs: at each answered
    latency, the share still unanswered shrinks by one over the copies still at risk; a
    censored latency only leaves the copies at risk. At equal latencies answers count
    first, as a censored copy was still unanswered then."""
    window.sort()  # (t, False) before (t, True)
    at_risk = len(window)
    survive = 1.0
    values: list[float] = []
    shares: list[float] = []
    for seconds, censored in window:
        if not censored:
            survive *= 1.0 - 1.0 / at_risk
            values.append(seconds)
            shares.append(1.0 - survive)
        at_risk -= 1
    largest = window[-1][0] if window else 0.0
    return _Estimate(tuple(values), tuple(shares), len(window), largest)


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

    def add(self, server: str, seconds: float, *, censored: bool = False) -> None:
        """Add one latency of ``server`` (``censored``: only known to be ``>= seconds``)."""
        with self._lock:
            window = self._windows.get(server)
            if window is None:
                window = self._windows[server] = LatencyWindow(self._size, self._refresh)
                while len(self._windows) > self._max:
                    self._windows.popitem(last=False)
            else:
                self._windows.move_to_end(server)
        window.add(seconds, censored=censored)


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
