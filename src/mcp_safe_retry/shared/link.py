"""One Redis connection for a shared budget or breaker, with its outage handling.

Every round trip goes through ``RedisLink.run``: it never raises, never waits longer than the
short socket timeout, and after a failure answers None at once (the caller falls back to its
local state) until ``retry_interval`` has passed. An outage is logged once, and so is the
recovery.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import pickle
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ..core.live import Flushes, flush_all
from ..instrumentation.hooks import logger

__all__ = [
    "KEY_PREFIX",
    "Flushed",
    "PortableClient",
    "RedisLink",
    "Ticker",
    "connect",
    "flush_at_exit",
    "on_event_loop",
]

T = TypeVar("T")

KEY_PREFIX = "mcp-safe-retry"
"""Every key is ``mcp-safe-retry:{NAME}:...``: the braces make it a Redis Cluster hash tag, so
all keys of one name live on one node and one script may touch several of them."""


def on_event_loop() -> bool:
    """Whether this thread runs an asyncio or trio event loop: a blocking call would stall it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        trio = sys.modules.get("trio")
        return trio is not None and bool(trio.lowlevel.in_trio_run())
    return True


def connect(url: str, timeout: float) -> redis.Redis:
    """A sync client that gives up fast: short timeouts and no retries of its own."""
    return redis.Redis.from_url(
        url,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
        retry_on_timeout=False,
        health_check_interval=0,
    )


class RedisLink:
    """A lazily built client, and whether Redis is taken to be reachable right now.

    Args:
        url_or_client: a ``redis://`` URL, or a ``redis.Redis`` client (give it short
            timeouts and no retries: its settings bound how long a retry may wait).
        timeout: socket and connect timeout, in seconds, for a client built from a URL.
        retry_interval: seconds after a failed round trip before Redis is tried again.
        what: what falls back to local state, for the log line.
    """

    def __init__(
        self,
        url_or_client: str | redis.Redis,
        *,
        timeout: float,
        retry_interval: float,
        what: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(url_or_client, str):
            self._url: str | None = url_or_client
            self._client: redis.Redis | None = None
        elif isinstance(url_or_client, redis.Redis):
            self._url, self._client = None, url_or_client
        else:
            raise TypeError("expected a redis:// URL or a redis.Redis client")
        self.timeout = timeout
        self.retry_interval = retry_interval
        self.what = what
        self.clock = clock
        self._down_until = 0.0
        self._down = False
        self._lock = threading.Lock()
        self._scripts: dict[str, Any] = {}

    @property
    def client(self) -> redis.Redis:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    assert self._url is not None
                    self._client = connect(self._url, self.timeout)
        return self._client

    def portable(self) -> str | redis.Redis:
        """What the link was built from, for a pickle: the URL, or a stand-in for the client
        it was given that unpickles as a new client with its settings (``TypeError`` if
        some of them do not pickle). Only to be pickled, never used as a client here."""
        if self._url is not None:
            return self._url
        assert self._client is not None
        return cast("redis.Redis", PortableClient(self._client))

    @property
    def up(self) -> bool:
        """False while a recent round trip failed: callers use local state, without waiting."""
        return not self._down or self.clock() >= self._down_until

    @property
    def down(self) -> bool:
        """Whether the last round trip failed (an outage is under way)."""
        return self._down

    def script(self, source: str) -> Any:
        """A registered Lua script (EVALSHA, loaded again by redis-py when Redis lost it)."""
        found = self._scripts.get(source)
        if found is None:
            found = self._scripts[source] = self.client.register_script(source)
        return found

    def run(self, work: Callable[[redis.Redis], T]) -> T | None:
        """``work(client)``, or None when Redis is down or fails now (logged once)."""
        if not self.up:
            return None
        try:
            result = work(self.client)
        except (redis.RedisError, OSError, ValueError) as error:
            self._failed(error)
            return None
        if self._down:
            self._down = False
            logger.info("mcp-safe-retry: Redis answers again: shared %s resumed", self.what)
        return result

    def _failed(self, error: BaseException) -> None:
        self._down_until = self.clock() + self.retry_interval
        if not self._down:
            self._down = True
            logger.warning(
                "mcp-safe-retry: Redis unreachable (%s: %s): local %s until it answers",
                type(error).__name__,
                str(error)[:200],
                self.what,
            )

    def after_fork(self) -> None:
        """In a forked child: a lock of its own, and a client of its own built again when
        this link built the parent's (a client passed in is the caller's to look after)."""
        self._lock = threading.Lock()
        if self._url is not None:
            self._client, self._scripts = None, {}

    def close(self) -> None:
        """Close a client this link built (a client passed in stays the caller's)."""
        if self._url is not None and self._client is not None:
            self._client.close()
            self._client = None


class Ticker:
    """A daemon thread that calls ``tick()`` every ``interval`` seconds, or at once when
    woken, until stopped or until the object ``tick`` is a method of is gone. Started on
    first use, so an unused object costs no thread. ``flush()`` waits for a round."""

    def __init__(self, tick: Callable[[], None], interval: float, name: str) -> None:
        self._tick = weakref.WeakMethod(tick)
        self.interval = interval
        self._name = name
        self._stop = threading.Event()
        self.after_fork()

    def after_fork(self) -> None:
        """Start afresh (in a forked child: the parent's thread and locks are not its own);
        stopped if it was."""
        stopped = self._stop.is_set()
        self._wake = threading.Event()
        self._stop = threading.Event()
        if stopped:
            self._stop.set()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._rounds = threading.Condition()
        self._begun = self._ended = 0  # rounds
        self._busy = False

    def ensure_started(self) -> None:
        if self._thread is not None or self._stop.is_set():
            return
        with self._lock:
            if self._thread is None:
                thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                thread.start()
                self._thread = thread

    def wake(self) -> None:
        self._wake.set()
        self.ensure_started()

    def flush(self, timeout: float, *, needed: bool) -> None:
        """Wake the thread and wait (at most ``timeout``) for the next round to end when
        something is ``needed`` to be sent, else for the round under way if any."""
        if self._stop.is_set() or threading.current_thread() is self._thread:
            return
        with self._rounds:
            if not needed and not self._busy:
                return
            target = self._begun + 1 if needed else self._begun
        try:
            self.wake()
        except RuntimeError:  # no new thread at interpreter exit: nothing to wait for
            return
        with self._rounds:
            self._rounds.wait_for(lambda: self._ended >= target, timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval)
            self._wake.clear()
            tick = self._tick()
            if tick is None or self._stop.is_set():
                return  # stopped, or its owner was forgotten without close()
            with self._rounds:
                self._begun += 1
                self._busy = True
            try:
                tick()
            except Exception:  # a bug here must not end the thread silently
                logger.exception("mcp-safe-retry: background Redis work failed")
            finally:
                with self._rounds:
                    self._ended, self._busy = self._begun, False
                    self._rounds.notify_all()
            del tick

    def stop(self, timeout: float) -> None:
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)


class Flushed(Flushes, Protocol):
    """What ``flush_at_exit`` keeps: an object whose pending state ``flush`` sends
    (``core.live.Flushes``), and which a forked child resets (``after_fork``)."""

    def after_fork(self) -> None: ...


_registry: weakref.WeakSet[Flushed] = weakref.WeakSet()


def flush_at_exit(shared: Flushed) -> None:
    """Flush ``shared`` when the interpreter exits (within its timeout), and reset it in a
    forked child; held weakly: an object dropped is forgotten."""
    _registry.add(shared)


def _after_fork_in_child() -> None:
    for shared in list(_registry):
        shared.after_fork()


atexit.register(lambda: flush_all(_registry))
os.register_at_fork(after_in_child=_after_fork_in_child)


# Settings redis-py makes for each pool itself: a rebuilt pool makes its own.
_POOL_MADE = frozenset({"himport_registry", "maint_notifications_pool_handler"})


class PortableClient:
    """A ``redis.Redis`` client's connection settings, which pickle (the client does not):
    loaded, it is a new client with those settings. Made by ``RedisLink.portable()``."""

    def __init__(self, client: redis.Redis) -> None:
        pool = client.connection_pool
        settings = {
            k: v
            for k, v in pool.connection_kwargs.items()
            # A bare object() is redis-py's "not given" marker: a pickle would make it a
            # different object, so it is left out and the default applies again.
            if k not in _POOL_MADE and type(v) is not object
        }
        stuck = sorted(k for k, v in settings.items() if not _pickles(v))
        if stuck:
            raise TypeError(
                f"cannot pickle a Redis client with {', '.join(stuck)} set: build the "
                "budget or breaker from a redis:// URL, or build it in each process"
            )
        self.recipe = (type(pool), pool.connection_class, pool.max_connections, settings)

    def __reduce__(self) -> tuple[Callable[..., redis.Redis], tuple[Any, ...]]:
        return _client, self.recipe


def _client(
    pool: type[redis.ConnectionPool],
    connection_class: type[Any],
    max_connections: int | None,
    settings: dict[str, Any],
) -> redis.Redis:
    return redis.Redis(
        connection_pool=pool(
            connection_class=connection_class, max_connections=max_connections, **settings
        )
    )


def _pickles(value: object) -> bool:
    try:
        pickle.dumps(value)
    except Exception:
        return False
    return True
