"""``RedisBudget``: one ``RetryBudget`` for a whole fleet, held in Redis."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable

import anyio.to_thread
import redis

from ..core.budget import EPSILON, RetryBudget
from ..core.live import Live
from .link import KEY_PREFIX, RedisLink, Ticker, flush_at_exit, on_event_loop

__all__ = ["RedisBudget"]

_SLACK = repr(EPSILON)

# KEYS[1]: the token count. ARGV: burst, credit earned by successes, 1 to spend a retry,
# expiry in ms, the slack for sums of fractions. Credits first, then the spend, in one
# atomic step; an absent key is a full budget.
SPEND = """
local burst = tonumber(ARGV[1])
local tokens = tonumber(redis.call('GET', KEYS[1]) or ARGV[1])
tokens = math.max(0, math.min(burst, tokens + tonumber(ARGV[2])))
local allowed = 0
if ARGV[3] == '1' and tokens >= 1 - tonumber(ARGV[5]) then
  tokens = math.max(0, tokens - 1)
  allowed = 1
end
redis.call('SET', KEYS[1], string.format('%.17g', tokens), 'PX', ARGV[4])
return {allowed, string.format('%.17g', tokens)}
"""


class RedisBudget(Live):
    """A ``RetryBudget`` (burst, then ``per_success`` retries per success) shared through
    Redis by every process that uses the same ``name``.

    ``record()`` never touches Redis: successes are added up here and sent by a background
    thread every ``flush_interval`` seconds (or with the next retry). A retry costs one round
    trip: ``allow_retry()`` blocks for it (at most ``timeout``); ``allow_retry_async()`` runs
    it in a worker thread, so the event loop never waits on Redis (asyncio and trio alike).
    While Redis is down, hung or unreachable, the budget falls back to a local
    ``RetryBudget`` of the same size, logs that once, and resumes the shared one when Redis
    answers again.

    Shared, never copied: ``copy.deepcopy`` returns this budget. It pickles by its
    connection settings (the URL, or the settings of the client it was given), its name and
    its settings: loaded in another process, it is a budget there on the same shared count.

    Args:
        url_or_client: a ``redis://`` URL, or a ``redis.Redis`` client.
        name: the budget's name: processes with the same name share it.
        burst: retries the fleet may send with no success in between.
        per_success: retries earned back by each attempt that reached a working server.
        timeout: socket timeout for a client built from a URL (seconds).
        retry_interval: seconds before Redis is tried again after a failure.
        flush_interval: seconds between two sends of the successes counted here.
        expiry: seconds an unused budget is kept in Redis (then it starts full again).
    """

    answers_inline = False
    """Shared: a round trip, so a shell asks it (an async shell awaits it off the event loop)."""

    def __init__(
        self,
        url_or_client: str | redis.Redis,
        *,
        name: str,
        burst: float = 100.0,
        per_success: float = 0.2,
        timeout: float = 0.25,
        retry_interval: float = 2.0,
        flush_interval: float = 0.5,
        expiry: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.local = RetryBudget(burst, per_success)
        self.burst, self.per_success = self.local.burst, self.local.per_success
        self.name = name
        self.key = f"{KEY_PREFIX}:{{{name}}}:budget"
        self.link = RedisLink(
            url_or_client,
            timeout=timeout,
            retry_interval=retry_interval,
            what="retry budget",
            clock=clock,
        )
        self._expiry = expiry
        self._expiry_ms = str(max(1, round(expiry * 1000)))
        self._credit = 0.0  # earned by successes here, less retries granted without a round trip
        self._shared = self.burst  # the shared count as last read, less those retries
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self._ticker = Ticker(self.send, flush_interval, f"mcp-safe-retry budget {name}")
        flush_at_exit(self)

    def record(self, *, failed: bool) -> None:
        self.local.record(failed=failed)
        if failed:
            return
        with self._lock:
            self._credit += self.per_success
            # Retries refused until now are allowed again: the fleet must know at once.
            crossed = self._shared < 1.0 - EPSILON <= self._shared + self._credit
        if crossed:
            self._ticker.wake()
        else:
            self._ticker.ensure_started()

    def allow_retry(self) -> bool:
        if not self.link.up:
            return self.local.allow_retry()
        if on_event_loop():
            return self._allow_without_waiting()
        allowed = self._spend(want=True)
        return self.local.allow_retry() if allowed is None else allowed

    def refund(self) -> None:
        """Give back the token of a retry or hedge this budget allowed that was then not sent
        (the breaker held it back). Never blocks: the token is added to the credit sent by
        the background thread, woken now, in the same atomic script as every credit (never
        above ``burst``); to the local budget while Redis is down, as it would have been
        spent there."""
        if not self.link.up:
            self.local.refund()
            return
        with self._lock:
            self._credit += 1.0
            self._shared = min(self.burst, self._shared + 1.0)
        self._ticker.wake()

    def _allow_without_waiting(self) -> bool:
        """Called on an event loop by a shell that does not await ``allow_retry_async()``:
        answer from the shared count last read, and send the spend with the next flush."""
        with self._lock:
            if self._shared < 1.0 - EPSILON:
                allowed = False
            else:
                self._shared -= 1.0
                self._credit -= 1.0
                allowed = True
        self._ticker.wake()
        return allowed

    async def allow_retry_async(self) -> bool:
        if not self.link.up:
            return self.local.allow_retry()
        return await anyio.to_thread.run_sync(self.allow_retry, abandon_on_cancel=True)

    @property
    def tokens(self) -> float | None:
        """The shared token count (one round trip), or None when Redis does not answer."""
        raw = self.link.run(lambda client: client.get(self.key))
        if raw is None:
            return None if self.link.down else self.burst
        return float(raw)

    def flush(self, timeout: float | None = None) -> None:
        """Send the credits and spends counted here now (the background thread does),
        waiting at most ``timeout`` seconds (None: the link's timeout); ``flush(0.0)`` does
        not wait. A transport given this budget calls it when it closes, and so does the
        interpreter as it exits (never raises, closes nothing)."""
        wait = self.link.timeout if timeout is None else timeout
        self._ticker.flush(wait, needed=bool(self._credit))

    def after_fork(self) -> None:
        """In a forked child: the credits pending are the parent's to send, the locks and
        the background thread new."""
        self._lock, self._flushing = threading.Lock(), threading.Lock()
        self._credit = 0.0
        self._ticker.after_fork()
        self.link.after_fork()

    def send(self) -> None:
        """Send the credits counted here in this thread (the background thread does this
        every ``flush_interval`` seconds; never raises)."""
        with self._flushing:  # one at a time: a caller's flush waits for the thread's
            if self._credit or self._shared < self.burst:
                self._spend(want=False)

    def _spend(self, *, want: bool) -> bool | None:
        with self._lock:
            credit, self._credit = self._credit, 0.0
        script = self.link.script(SPEND)
        args = [repr(self.burst), repr(credit), "1" if want else "0", self._expiry_ms, _SLACK]
        reply = self.link.run(lambda client: script(keys=[self.key], args=args, client=client))
        if reply is None:
            with self._lock:  # keep the credit for when Redis answers again
                self._credit = min(self.burst, self._credit + credit)
            return None
        with self._lock:
            self._shared = float(reply[1]) + min(0.0, self._credit)
        return bool(int(reply[0]))

    def close(self) -> None:
        """Send the credits counted here, stop the background thread, close an own client."""
        self._ticker.stop(self.link.timeout * 2)
        self.send()
        self.link.close()

    def __enter__(self) -> RedisBudget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RedisBudget(name={self.name!r}, burst={self.burst:g})"

    def _recipe(self) -> functools.partial[RedisBudget]:
        return functools.partial(
            RedisBudget,
            self.link.portable(),
            name=self.name,
            burst=self.burst,
            per_success=self.per_success,
            timeout=self.link.timeout,
            retry_interval=self.link.retry_interval,
            flush_interval=self._ticker.interval,
            expiry=self._expiry,
            clock=self.link.clock,
        )
