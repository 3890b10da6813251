"""``RedisCircuitBreaker``: one ``CircuitBreaker`` per server for a whole fleet, in Redis."""

from __future__ import annotations

import functools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

import anyio.to_thread
import attrs
import redis

from ..core.breaker import BreakerSettings, Circuits, CircuitState
from ..core.live import Live
from .circuits import Outcomes, SharedCircuits, SharedState
from .link import RedisLink, Ticker, flush_at_exit, on_event_loop

__all__ = ["RedisCircuitBreaker"]


@attrs.frozen
class _Seen:
    """A circuit's shared state as last read, and until when (local monotonic) it holds."""

    state: CircuitState
    until: float


class RedisCircuitBreaker(Live):
    """A ``CircuitBreaker`` whose circuits are shared through Redis by every process that
    uses the same ``name``: a circuit tripped by one process holds the others back within
    one ``refresh`` interval, and a successful probe closes it for all.

    The success path makes no blocking round trip: ``allow()`` answers from the shared state
    last read, and a background thread sends the outcomes ``record()`` counted and reads the
    state again every ``refresh`` seconds (at once after a failure). Two checks cost one round
    trip: the first for a server key in this process (so a process started while the fleet's
    circuit is open sends nothing), and a probe, when an open circuit's time is up.
    ``allow()`` blocks for it (at most ``timeout``); ``allow_async()`` runs it in a worker
    thread (a plain ``allow()`` made on an event loop answers from the local breaker
    instead). While Redis is down, hung or unreachable, local circuits (``Circuits``, a
    ``CircuitBreaker``'s core) fed with the same outcomes answer instead (logged once); the
    shared state resumes when Redis answers again. Redis holds a hash of each server key,
    never the key itself (``shared/circuits.py``: the circuits as Redis holds them, and the
    round trips).

    Shared, never copied: ``copy.deepcopy`` returns this breaker. It pickles by its
    connection settings (the URL, or the settings of the client it was given), its name and
    its settings: loaded in another process, it is a breaker there on the same circuits.

    Args:
        url_or_client: a ``redis://`` URL, or a ``redis.Redis`` client.
        name: the breaker's name: processes with the same name share it.
        failure_threshold: as for ``CircuitBreaker``.
        failure_ratio: as for ``CircuitBreaker``.
        min_calls: as for ``CircuitBreaker``.
        window: as for ``CircuitBreaker``.
        open_for: as for ``CircuitBreaker``.
        max_open_for: as for ``CircuitBreaker``.
        probes: as for ``CircuitBreaker``.
        refresh: seconds between two reads of the shared state.
        timeout: socket timeout for a client built from a URL (seconds).
        retry_interval: seconds before Redis is tried again after a failure.
        expiry: seconds an untouched circuit is kept in Redis.
        max_servers: circuits remembered in this process.
    """

    answers_inline = False
    """Shared: a round trip, so a shell asks it (an async shell awaits it off the event loop)."""

    def __init__(
        self,
        url_or_client: str | redis.Redis,
        *,
        name: str,
        failure_threshold: int = 5,
        failure_ratio: float = 0.5,
        min_calls: int = 20,
        window: float = 30.0,
        open_for: float = 30.0,
        max_open_for: float = 300.0,
        probes: int = 1,
        refresh: float = 0.5,
        timeout: float = 0.25,
        retry_interval: float = 2.0,
        expiry: float | None = None,
        max_servers: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = BreakerSettings(
            failure_threshold=failure_threshold,
            failure_ratio=failure_ratio,
            min_calls=min_calls,
            window=window,
            open_for=open_for,
            max_open_for=max_open_for,
            probes=probes,
        )
        self.local = Circuits(self.settings, clock=clock, max_servers=max_servers)
        self.name = name
        self.clock = clock
        self.max_servers = max_servers
        self.link = RedisLink(
            url_or_client,
            timeout=timeout,
            retry_interval=retry_interval,
            what="circuit breaker",
            clock=clock,
        )
        if expiry is None:
            expiry = 2 * max(window, max_open_for) + 60
        self.shared = SharedCircuits(self.link, name, self.settings, expiry)
        self._seen: OrderedDict[str, _Seen] = OrderedDict()  # by server key
        self._pending: dict[str, Outcomes] = {}
        # Which refresh's outcomes a local trip is in: a read that went out before those
        # outcomes reached Redis must not reopen (replace) the trip with the older state.
        self._round = 0
        self._tripped: dict[str, int] = {}
        self._changed = False  # a state change made on an event loop, not yet awaited
        self._lock = threading.Lock()
        self._refreshing = threading.Lock()
        self._ticker = Ticker(self.refresh, refresh, f"mcp-safe-retry breaker {name}")
        flush_at_exit(self)

    def redis_key(self, key: str) -> str:
        """Where a server's circuit lives: a hash of its key, under this breaker's name."""
        return self.shared.key(key)

    def state(self, key: str) -> CircuitState:
        """The shared state as last read (the local one while Redis is down)."""
        if self.link.down:
            return self.local.state(key)
        seen = self._seen.get(key)
        return CircuitState.CLOSED if seen is None else seen.state

    def retry_in(self, key: str) -> float | None:
        """Seconds until an open circuit lets a probe through, as last read; None when it
        is not open (the local breaker's answer while Redis is down)."""
        if self.link.down:
            return self.local.retry_in(key)
        seen = self._seen.get(key)
        if seen is None or seen.state is not CircuitState.OPEN:
            return None
        return max(0.0, seen.until - self.clock())

    def allow(self, key: str) -> bool:
        known = self._known(key)
        if known is not None:
            return known
        if on_event_loop():  # a shell that should have awaited allow_async(): never block
            self._watch(key)
            return self.local.allow(key)
        return self._probe(key)

    async def allow_async(self, key: str) -> bool:
        if self._changed:  # a trip or a probe's success made on the event loop: the next
            self._changed = False  # check waits for its send, in a worker thread
            await anyio.to_thread.run_sync(self.flush, None, abandon_on_cancel=True)
        known = self._known(key)
        if known is not None:
            return known
        return await anyio.to_thread.run_sync(self._probe, key, abandon_on_cancel=True)

    def _known(self, key: str) -> bool | None:
        """The answer without a round trip (the local breaker's while Redis is down, or the
        shared state last read); None when Redis must be asked: the first check for this
        key (its shared state is not known yet), or a probe due, which Redis grants."""
        self._ticker.ensure_started()
        if not self.link.up:
            return self.local.allow(key)
        seen = self._seen.get(key)
        if seen is None:
            return None
        if seen.state is CircuitState.CLOSED:
            return True
        if self.clock() < seen.until:
            return False
        return None

    def record(
        self, key: str, *, failed: bool, retry_after: float | None = None, ends_call: bool = True
    ) -> None:
        was_open = failed and self.local.state(key) is CircuitState.OPEN
        self.local.record(key, failed=failed, retry_after=retry_after, ends_call=ends_call)
        seen = self._seen.get(key)
        opened = failed and not was_open and self.local.state(key) is CircuitState.OPEN
        if opened and seen is not None:
            # This process's own failures tripped it: hold back here at once, not one
            # refresh later; the shared state read next (woken below) replaces this.
            self._remember(key, CircuitState.OPEN, self.settings.open_duration(retry_after))
            seen = self._seen.get(key)
        if not failed and seen is None:
            return  # a healthy server this fleet has no circuit for: nothing to send
        with self._lock:
            pending = self._pending.get(key)
            if pending is None:
                pending = self._pending[key] = Outcomes()
            if opened and seen is not None:
                self._tripped[key] = self._round  # goes out with the failure, next send
            if failed:
                pending.failed += 1
                pending.tail += 1
                if retry_after is not None:
                    pending.retry_after = max(pending.retry_after, retry_after)
            else:
                pending.ok += 1
                pending.tail = 0
            if ends_call:
                pending.calls += 1
                pending.calls_failed += failed
        # A trip, or a probe's success: the fleet must know before this call ends.
        held = seen is not None and seen.state is not CircuitState.CLOSED
        changed = opened or (held and not failed)
        if changed and not on_event_loop():
            self._ticker.flush(self.link.timeout, needed=True)
        elif failed or held:
            self._changed = self._changed or changed
            self._ticker.wake()  # tell the fleet now (an event loop does not wait for it)
        else:
            self._ticker.ensure_started()

    def _probe(self, key: str) -> bool:
        """Ask Redis (one round trip, at most ``timeout``): a probe's slot, or the shared
        state of a circuit seen here for the first time (granting a probe if one is due)."""
        reply = self.shared.probe(key)
        if reply is None:
            self._watch(key)
            return self.local.allow(key)
        allowed, shared = reply
        # A probe let through: ask again next time (the slot is this call's).
        self._remember(key, shared.state, 0.0 if allowed else shared.wait)
        return allowed

    def _watch(self, key: str) -> None:
        """A circuit Redis could not be asked about now: taken as closed, and read with the
        others in the background from now on (as every circuit was before its first check
        read Redis)."""
        if key not in self._seen:
            self._remember(key, CircuitState.CLOSED, 0.0)

    def _remember(self, key: str, state: CircuitState, wait: float) -> None:
        with self._lock:
            self._seen[key] = _Seen(state, self.clock() + wait)
            self._seen.move_to_end(key)
            while len(self._seen) > self.max_servers:
                self._seen.popitem(last=False)

    def refresh(self) -> None:
        """Send the outcomes counted here, then read the shared state of every known circuit
        (the background thread does this every ``refresh`` seconds; never raises)."""
        with self._refreshing:  # one at a time: a caller's refresh waits for the thread's
            self._refresh()

    def _refresh(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
            self._round += 1
            round_ = self._round
        if pending:
            sent = self.shared.send(pending)
            if sent is None:
                with self._lock:  # Redis did not answer: keep them for the next try
                    for key, value in pending.items():
                        self._pending.setdefault(key, value)
                return
            self._adopt(sent, round_)
        keys = list(self._seen)
        read = self.shared.read(keys) if keys else None
        if read is not None:
            self._adopt(read, round_)

    def _adopt(self, answered: dict[str, SharedState], round_: int) -> None:
        """Take the shared states Redis answered in refresh ``round_``, except for a circuit
        this process tripped after that refresh took its outcomes: Redis has not heard of
        the trip yet, so its answer is older than what is known here."""
        for key, shared in answered.items():
            with self._lock:
                tripped = self._tripped.get(key)
                if tripped is not None and tripped < round_:
                    del self._tripped[key]  # the trip went out with this refresh's outcomes
                    tripped = None
            if tripped is None or shared.state is CircuitState.OPEN:
                self._remember(key, shared.state, shared.wait)

    def flush(self, timeout: float | None = None) -> None:
        """Send the outcomes counted here now (the background thread does), waiting at most
        ``timeout`` seconds (None: the link's timeout); ``flush(0.0)`` does not wait. A
        transport given this breaker calls it when it closes, and so does the interpreter as
        it exits (never raises, closes nothing)."""
        wait = self.link.timeout if timeout is None else timeout
        self._ticker.flush(wait, needed=bool(self._pending))

    def after_fork(self) -> None:
        """In a forked child: the outcomes pending are the parent's to send, the locks and
        the background thread new."""
        self._lock, self._refreshing = threading.Lock(), threading.Lock()
        self._pending, self._tripped, self._changed = {}, {}, False
        self._ticker.after_fork()
        self.link.after_fork()

    def close(self) -> None:
        """Send the outcomes counted here, stop the background thread, close an own client."""
        self._ticker.stop(self.link.timeout * 4)
        self.refresh()
        self.link.close()

    def __enter__(self) -> RedisCircuitBreaker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RedisCircuitBreaker(name={self.name!r}, servers={len(self._seen)})"

    def _recipe(self) -> functools.partial[RedisCircuitBreaker]:
        return functools.partial(
            RedisCircuitBreaker,
            self.link.portable(),
            name=self.name,
            **attrs.asdict(self.settings),
            refresh=self._ticker.interval,
            timeout=self.link.timeout,
            retry_interval=self.link.retry_interval,
            expiry=self.shared.expiry,
            max_servers=self.max_servers,
            clock=self.clock,
        )
