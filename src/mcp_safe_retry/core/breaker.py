"""A circuit breaker per server: fail fast while a server is down, probe, close on success.

A circuit is kept per server key (``server_key``: the request URL's origin and path). It
counts only transport-layer failures, as the engine's ``is_transient`` tells them; a tool
error, a JSON-RPC error or an invalid answer comes from a working server and counts as a
success here.

Two triggers, each with its own unit. The run of failures in a row counts attempts (every
POST sent), so a server that is down opens the circuit within ``failure_threshold`` failed
attempts. The failure ratio counts calls as their callers saw them: a call that ended in
success (or in an answer from a working server) is one success however many of its
attempts failed, a call that ended failed after its retries is one failure, and an attempt
that a retry or another copy followed counts in the ratio not at all. So failures that the
calls' own retries rescued never open the circuit.

- **closed**: requests go. It opens after ``failure_threshold`` transient failures in a row,
  or when at least ``min_calls`` calls ended in the last ``window`` seconds, a share of at
  least ``failure_ratio`` of them failed.
- **open**: requests are held back for ``open_for`` seconds (longer if the failure that
  tripped it carried a larger Retry-After, up to ``max_open_for``).
- **half-open**: then up to ``probes`` requests go through; a success closes the circuit, a
  failure opens it again. A probe that never reports frees its slot after ``open_for``.

Which method a shell calls, per request with a JSON-RPC id:
- before sending, a sync shell calls ``allow(key)``; an async shell awaits
  ``allow_async(key)``. False: send nothing, end the call with ``Outcome.CIRCUIT_OPEN``.
- after each attempt that was sent, both call ``record(key, failed=..., retry_after=...,
  ends_call=...)`` (never blocks); ``failed`` is ``is_transient(policy, classification)``,
  ``ends_call`` False when a retry or another copy of the call follows it.
"""

from __future__ import annotations

import enum
import functools
import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import attrs

from .live import Live
from .outcomes import Classification, Outcome, verdict
from .servers import server_key

__all__ = [
    "FOLLOW_UP_WINDOW",
    "Breaker",
    "BreakerSettings",
    "CircuitState",
    "Circuits",
    "RecentAnswers",
    "circuit_open",
    "server_key",
    "should_trip",
]


def circuit_open(key: str, retry_in: float | None = None) -> Classification:
    """The verdict on a request the breaker held back (transport layer, nothing sent)."""
    detail = f"circuit open for {key}"
    if retry_in is not None:
        detail += f" (next probe in {retry_in:.1f}s)"
    return verdict(Outcome.CIRCUIT_OPEN, detail=detail, error_kind="circuit_open")


class CircuitState(enum.StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


def _check(name: str, value: float, low: float, high: float = math.inf) -> None:
    if not (math.isfinite(value) and low <= value <= high):
        raise ValueError(f"{name} must be a finite number in [{low:g}, {high:g}]")


@attrs.frozen
class BreakerSettings:
    """When a circuit opens and for how long (shared by the local and the Redis breaker)."""

    failure_threshold: int = 5
    failure_ratio: float = 0.5
    min_calls: int = 20
    window: float = 30.0
    open_for: float = 30.0
    max_open_for: float = 300.0
    probes: int = 1

    def __attrs_post_init__(self) -> None:
        _check("failure_threshold", self.failure_threshold, 1)
        _check("failure_ratio", self.failure_ratio, 0.0, 1.0)
        if self.failure_ratio == 0:
            raise ValueError("failure_ratio must be > 0")
        _check("min_calls", self.min_calls, 1)
        _check("window", self.window, 0.001)
        _check("open_for", self.open_for, 0.001)
        _check("max_open_for", self.max_open_for, self.open_for)
        _check("probes", self.probes, 1)

    def open_duration(self, retry_after: float | None) -> float:
        """Seconds a circuit stays open: ``open_for``, or a larger Retry-After up to a cap."""
        if retry_after is None or not math.isfinite(retry_after):
            return self.open_for
        return min(self.max_open_for, max(self.open_for, retry_after))


def should_trip(settings: BreakerSettings, consecutive: int, calls: int, failures: int) -> bool:
    """Whether a closed circuit opens, given its run of failed attempts and its window's
    counts of ended calls and of those that failed."""
    if consecutive >= settings.failure_threshold:
        return True
    return calls >= settings.min_calls and failures >= settings.failure_ratio * calls


@runtime_checkable
class Breaker(Protocol):
    """What the shells need from a breaker; ``mcp_safe_retry.redis.RedisCircuitBreaker``
    implements the same three methods over shared storage. A breaker that also has
    ``retry_in(key)`` (seconds until an open circuit's next probe, or None) has it named in
    the message of a request it held back."""

    def allow(self, key: str) -> bool:
        """May a request to ``key`` be sent now? Called by sync shells."""

    async def allow_async(self, key: str) -> bool:
        """The same answer for async shells, awaited: never blocks the event loop."""

    def record(
        self, key: str, *, failed: bool, retry_after: float | None = None, ends_call: bool = True
    ) -> None:
        """An attempt to ``key`` ended; ``failed`` when it was a transient failure.
        ``ends_call``: its call ends with it (no retry, no other copy follows), so its
        outcome is the call's and counts in the failure ratio; every attempt counts in the
        run of failures in a row."""


BUCKETS = 10
"""The window is counted in this many buckets of ``window / BUCKETS`` seconds each."""


@attrs.define
class _Circuit:
    state: CircuitState = CircuitState.CLOSED
    consecutive: int = 0
    until: float = 0.0  # open: when probing may start; half-open: when lost probes expire
    probes: int = 0
    buckets: dict[int, list[int]] = attrs.Factory(dict)  # bucket number -> [calls, failures]


class Circuits(Live):
    """Circuits for many servers in one process (thread- and task-safe), read against the
    clock they are handed: ``mcp_safe_retry.CircuitBreaker`` is this with its settings
    spelled out and the system's monotonic clock by default; ``RedisCircuitBreaker`` falls
    back to one of these while Redis is down.

    Shared, never copied: ``copy.deepcopy`` returns this breaker. Pickled and loaded in
    another process, it is a fresh one there, every circuit closed, with the same settings.

    Args:
        settings: when a circuit opens and for how long.
        clock: monotonic seconds (tests hand their own, so they never wait).
        max_servers: circuits kept; the least recently used is forgotten beyond that.
    """

    answers_inline = True
    """This process's own: it answers at once, so a call asks it itself (never awaited)."""

    def __init__(
        self, settings: BreakerSettings, *, clock: Callable[[], float], max_servers: int = 1024
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.max_servers = max_servers
        self._circuits: OrderedDict[str, _Circuit] = OrderedDict()
        self._lock = threading.Lock()  # held for a few instructions, never across an await

    def state(self, key: str) -> CircuitState:
        """The circuit's state now (an open circuit past its time reads as half-open)."""
        with self._lock:
            circuit = self._circuits.get(key)
            if circuit is None:
                return CircuitState.CLOSED
            if circuit.state is CircuitState.OPEN and self.clock() >= circuit.until:
                return CircuitState.HALF_OPEN
            return circuit.state

    def retry_in(self, key: str) -> float | None:
        """Seconds until an open circuit lets a probe through; None when not open."""
        with self._lock:
            circuit = self._circuits.get(key)
            if circuit is None or circuit.state is not CircuitState.OPEN:
                return None
            return max(0.0, circuit.until - self.clock())

    def allow(self, key: str) -> bool:
        with self._lock:
            circuit = self._circuits.get(key)
            if circuit is None or circuit.state is CircuitState.CLOSED:
                return True
            now = self.clock()
            if circuit.state is CircuitState.OPEN:
                if now < circuit.until:
                    return False
                circuit.state, circuit.probes = CircuitState.HALF_OPEN, 0
            elif now >= circuit.until:  # half-open, and the probes out never reported
                circuit.probes = 0
            if circuit.probes >= self.settings.probes:
                return False
            circuit.probes += 1
            circuit.until = now + self.settings.open_for
            return True

    async def allow_async(self, key: str) -> bool:
        return self.allow(key)

    def record(
        self, key: str, *, failed: bool, retry_after: float | None = None, ends_call: bool = True
    ) -> None:
        with self._lock:
            circuit = self._circuits.get(key)
            if circuit is None:
                if not failed:
                    return  # a healthy server with no history: nothing to keep
                circuit = self._circuits[key] = _Circuit()
                while len(self._circuits) > self.max_servers:
                    self._circuits.popitem(last=False)
            else:
                self._circuits.move_to_end(key)
            now = self.clock()
            settings = self.settings
            if circuit.state is CircuitState.HALF_OPEN:
                if failed:
                    self._open(circuit, now, retry_after)
                else:
                    self._circuits[key] = _Circuit()
                return
            if circuit.state is CircuitState.OPEN:
                if failed and retry_after is not None:  # a longer wait asked for: honour it
                    circuit.until = max(circuit.until, now + settings.open_duration(retry_after))
                return
            circuit.consecutive = circuit.consecutive + 1 if failed else 0
            outcome = failed if ends_call else None  # the ratio counts calls, not attempts
            calls, failures = _count(circuit.buckets, now, settings.window, outcome)
            if failed and should_trip(settings, circuit.consecutive, calls, failures):
                self._open(circuit, now, retry_after)

    def _open(self, circuit: _Circuit, now: float, retry_after: float | None) -> None:
        circuit.state = CircuitState.OPEN
        circuit.until = now + self.settings.open_duration(retry_after)
        circuit.consecutive = circuit.probes = 0
        circuit.buckets.clear()

    def _recipe(self) -> Callable[[], Circuits]:
        return functools.partial(
            Circuits, self.settings, clock=self.clock, max_servers=self.max_servers
        )

    def __repr__(self) -> str:
        open_ = sum(c.state is not CircuitState.CLOSED for c in self._circuits.values())
        name = type(self).__name__
        return f"{name}(servers={len(self._circuits)}, not_closed={open_})"


def _count(
    buckets: dict[int, list[int]], now: float, window: float, failed: bool | None
) -> tuple[int, int]:
    """Add one call's outcome to the window's buckets (None: none, an attempt that did not
    end its call); the window's (calls, failures) after it."""
    current = math.floor(now * BUCKETS / window)
    for number in [n for n in buckets if n <= current - BUCKETS]:
        del buckets[number]
    if failed is not None:
        bucket = buckets.setdefault(current, [0, 0])
        bucket[0] += 1
        bucket[1] += failed
    return sum(b[0] for b in buckets.values()), sum(b[1] for b in buckets.values())


FOLLOW_UP_WINDOW = 5.0
"""Seconds after a server's last answer in which a read to it is sent whatever its circuit
says. The breaker spares a failing server; a server that just answered is not one, and the
read that follows an answer is most often the SDK's own (mcp 2.x ``call_tool`` lists the
tools after a call to validate its result): refused, it fails a call that already ran."""


class RecentAnswers:
    """When each server (by breaker key) last answered a POST with no transient failure:
    a transport's own, read against its clock, bounded (``max_servers``)."""

    def __init__(self, max_servers: int = 1024) -> None:
        self._max = max_servers
        self._at: dict[str, float] = {}

    def answered(self, key: str, now: float) -> None:
        """The server ``key`` names answered now."""
        at = self._at
        if len(at) >= self._max and key not in at:  # many servers: start over
            at.clear()
        at[key] = now

    def follows(self, key: str, now: float, window: float = FOLLOW_UP_WINDOW) -> bool:
        """Whether the server ``key`` names answered within ``window`` seconds of ``now``."""
        at = self._at.get(key)
        return at is not None and 0.0 <= now - at <= window
