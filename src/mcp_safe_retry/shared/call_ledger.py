"""``RedisCallLedger``: the call ledger shared by a fleet of processes through Redis."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar

import attrs
import redis

from ..core.call_ledger import PROCESS, LedgerEntry, Live
from ..core.duplicate import EarlierCall, LedgerState
from ..core.live import Live as Shared
from . import ledger_store as store
from .ledger_backlog import Backlog
from .ledgers import CallLedger
from .link import RedisLink, flush_at_exit

__all__ = ["REDIS", "RedisCallLedger"]

T = TypeVar("T")

REDIS = "redis"
"""``decided_by`` of a decision Redis made (the fleet's ledger)."""


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def _why(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text[:80]}" if text else type(error).__name__


class RedisCallLedger(Shared):
    """A ``CallLedger`` shared through Redis by every process that uses the same ``name``:
    an UNSAFE tool call in flight or that may have run in one process is held in all.

    A call is written in with one atomic round trip just before its request leaves (kept
    for the window: a process killed mid-call leaves it held), and settled with one when it
    ends: answered to its caller, or never sent, forgets it (only the claim of its sender);
    anything else keeps it with how it ended. Answers never go to Redis: a re-send joins an
    unseen answer only in the process that received it.

    Every round trip is bounded by ``timeout``. When Redis is unreachable, hung or slow, the
    local ledger (``local``, a ``CallLedger`` of its own unless given one), which mirrors
    every claim and settle, decides, and ``decided_by`` says so ("process (redis
    unreachable: ...)"); for ``retry_interval`` seconds after a failure Redis is not asked
    at all (no call pays the timeout twice in a row). What was written meanwhile is sent
    when Redis answers again (a background thread, every ``retry_interval``). Never raises
    because of Redis. A call this process still holds that Redis lost (restarted, or a call
    running longer than the window) is held, and written back.

    Shared, never copied: ``copy.deepcopy`` returns this ledger. It pickles by its
    connection settings (the URL, or the settings of the client it was given) and its name:
    loaded in another process, it is a ledger there on the same calls. A forked child
    builds its own client (from a URL) and keeps its parent's local calls.

    Args:
        url_or_client: a ``redis://`` URL, or a ``redis.Redis`` client (give it short
            timeouts and no retries: they bound a call's wait).
        name: the ledger's name: processes with the same name share their calls.
        timeout: socket and connect timeout of a client built from a URL (seconds).
        local: the process's own copy (a fresh ``CallLedger`` by default; not one that
            transports use directly).
        retry_interval: seconds after a failure before Redis is asked again.
    """

    def __init__(
        self,
        url_or_client: str | redis.Redis,
        *,
        name: str = "default",
        timeout: float = 0.25,
        local: CallLedger | None = None,
        retry_interval: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if type(name) is not str or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        for what, value in (("timeout", timeout), ("retry_interval", retry_interval)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"{what} must be a number of seconds > 0, got {value!r}")
        if local is not None and not isinstance(local, CallLedger):
            raise TypeError(f"local must be a CallLedger, got {local!r}")
        self.name = name
        self.local = local if local is not None else CallLedger()
        self._source = url_or_client
        self.link = self._link(url_or_client, timeout, retry_interval, clock)
        self._reason = "no answer"
        self._start()
        flush_at_exit(self)  # flushed as the interpreter exits, reset in a forked child

    def _link(
        self,
        source: str | redis.Redis,
        timeout: float,
        retry_interval: float,
        clock: Callable[[], float],
    ) -> RedisLink:
        return RedisLink(
            source,
            timeout=timeout,
            retry_interval=retry_interval,
            what="call ledger",
            clock=clock,
        )

    def _start(self) -> None:
        """What waits to be sent, and the thread that sends it (again in a forked child)."""
        self._backlog = Backlog(self._run, self.link, self.name)

    # -- the round trips ----------------------------------------------------------------

    def _run(self, work: Callable[[redis.Redis], T]) -> tuple[T] | None:
        """``(work(client),)``, or None when Redis is down or fails now (why: ``_reason``)."""

        def recorded(client: redis.Redis) -> tuple[T]:
            try:
                return (work(client),)
            except (redis.RedisError, OSError, ValueError) as error:
                self._reason = _why(error)
                raise

        return self.link.run(recorded)

    def _script(self, source: str) -> Any:
        return self.link.script(source)

    def _unreachable(self) -> str:
        return f"{PROCESS} (redis unreachable: {self._reason})"

    def _key(self, server: str, digest: str) -> str:
        return store.key_of(self.name, server, digest)

    # -- the ledger -----------------------------------------------------------------------

    def claim(
        self, server: str, digest: str, call: EarlierCall, window: float, now: float
    ) -> tuple[EarlierCall | None, str]:
        """Write ``call`` in as in flight, unless a call with the same server and digest is
        kept (in Redis, or in this process's copy while Redis does not answer): then that
        one, and nothing written. The second value names who decided."""
        key, value, ms = self._key(server, digest), store.encode(server, digest, call), _ms(window)
        claim = self._script(store.CLAIM)
        reply = self._run(
            lambda c: claim(keys=[key, key + store.RESOLVED], args=[value, ms], client=c)
        )
        if reply is None:
            found, _ = self.local.claim(server, digest, call, window, now)
            if found is None:
                self._backlog.add("claim", key, value, window)
            return found, self._unreachable()
        held, raw = reply[0]
        if int(held):
            decoded = store.decode(raw)
            if decoded is None:  # not a call: a value another program wrote under the key
                self.put(server, digest, call, window, now)
                return None, REDIS
            earlier = decoded[2]
            mine = self.local.look(server, digest, now)
            if mine is not None and mine.owner == earlier.owner:
                # This process's own call: the fleet's state, with the answer its copy may
                # carry (to join); a claim of it tells a call still in flight here that its
                # caller gave up.
                found, _ = self.local.claim(server, digest, call, window, now)
                if found is not None:
                    return attrs.evolve(earlier, answer=found.answer), REDIS
                self.local.settle(server, digest, call.owner, None, window=window, now=now)
            return earlier, REDIS
        found, _ = self.local.claim(server, digest, call, window, now)
        if found is None:
            return None, REDIS
        marker = raw.decode() if isinstance(raw, bytes) else str(raw)
        if marker and marker == found.owner:  # a person said it did not run
            self.local.put(server, digest, call, window, now)
            return None, REDIS
        # Redis lost a call this process holds (restarted, evicted, or still running past
        # the window): held by the process's own memory, and written back in its place.
        kept = store.encode(server, digest, found)
        self._run(lambda c: c.set(key, kept, px=ms))
        return found, PROCESS

    def put(self, server: str, digest: str, call: EarlierCall, window: float, now: float) -> str:
        """Write ``call`` in whatever is kept (a twin sent with consent, or only labelled);
        returns who wrote it."""
        self.local.put(server, digest, call, window, now)
        key, value = self._key(server, digest), store.encode(server, digest, call)
        if self._run(lambda c: c.set(key, value, px=_ms(window))) is None:
            self._backlog.add("set", key, value, window)
            return self._unreachable()
        return REDIS

    def settle(
        self,
        server: str,
        digest: str,
        owner: str,
        call: EarlierCall | None,
        *,
        window: float,
        now: float,
    ) -> None:
        """The call ``owner`` claimed ended: ``call`` None (answered to its caller, or never
        sent) forgets it, if the key is still its own; else ``call`` is kept, as it ended
        (in Redis without its answer, which stays in this process)."""
        self.local.settle(server, digest, owner, call, window=window, now=now)
        key = self._key(server, digest)
        if call is None:
            forget = self._script(store.FORGET)
            if self._run(lambda c: forget(keys=[key], args=[owner], client=c)) is None:
                self._backlog.add("forget", key, owner)
            return
        value = store.encode(server, digest, call)
        if self._run(lambda c: c.set(key, value, px=_ms(window))) is None:
            self._backlog.add("set", key, value, window)

    def look(self, server: str, digest: str, now: float) -> EarlierCall | None:
        """The call kept for this server and digest, if any (with the answer this process's
        copy of a call of its own may carry)."""
        key = self._key(server, digest)
        reply = self._run(lambda c: c.get(key))
        mine = self.local.look(server, digest, now)
        if reply is None or reply[0] is None:
            return mine
        decoded = store.decode(reply[0])
        if decoded is None:
            return mine
        earlier = decoded[2]
        if mine is not None and mine.owner == earlier.owner:
            return attrs.evolve(earlier, answer=mine.answer)
        return earlier

    def live(self, owner: str, call: Live | None) -> None:
        """The call ``owner`` claimed is in flight in this process (``call``), or is over."""
        self.local.live(owner, call)

    def in_doubt(self, now: float | None = None) -> list[LedgerEntry]:
        """The calls the fleet keeps that may have run, or are running (not those resolved
        as ran), oldest first; this process's own while Redis does not answer."""
        self._backlog.push()
        reply = self._run(lambda c: store.entries(c, self.name))
        if reply is None:
            return self.local.in_doubt(now)
        return [
            LedgerEntry(s.server, s.digest, s.call, s.expires_in)
            for s in reply[0]
            if s.call.state is not LedgerState.RAN
        ]

    def resolve(self, server: str, digest: str, *, ran: bool) -> bool:
        """A person's verdict on a call kept: it did not run (forgotten, in every process
        of the fleet: the same call may be sent again), or it ran (kept for the rest of its
        window, no longer in doubt). False when no such call is kept."""
        if not isinstance(ran, bool):
            raise TypeError(f"ran must be True or False, got {ran!r}")
        here = self.local.resolve(server, digest, ran=ran)
        key, script = self._key(server, digest), self._script(store.RESOLVE)
        reply = self._run(lambda c: store.resolve(c, key, ran=ran, script=script))
        if reply is None:
            self._backlog.add("resolve", key, "1" if ran else "0")
            return here
        return reply[0] or here

    def clear(self) -> None:
        """Forget every call of this ledger, here and in Redis (tests, and a person
        starting over)."""
        self._backlog.clear()
        self.local.clear()
        self._run(lambda c: store.delete_all(c, self.name))

    # -- what waits to be sent ------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> None:
        """Send what was written here while Redis did not answer, waiting at most
        ``timeout`` seconds (None: the link's timeout) for a send under way;
        ``flush(0.0)`` leaves it to the background thread. Never raises."""
        self._backlog.flush(timeout)

    def after_fork(self) -> None:
        """In a forked child: fresh locks and thread, the parent's unsent writes left to
        the parent, and a client of its own when the ledger was built from a URL."""
        if isinstance(self._source, str):
            link = self.link
            self.link = self._link(self._source, link.timeout, link.retry_interval, link.clock)
        self._start()

    def close(self) -> None:
        """Send what waits, stop the background thread, close a client of its own."""
        self._backlog.stop()
        self.link.close()

    def __enter__(self) -> RedisCallLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        """How many calls the fleet keeps (one scan; this process's own while Redis does
        not answer)."""
        reply = self._run(lambda c: len(store.entries(c, self.name)))
        return len(self.local) if reply is None else reply[0]

    def __bool__(self) -> bool:
        return True  # a ledger, empty or not (never a round trip to ask)

    def __repr__(self) -> str:
        return f"RedisCallLedger(name={self.name!r})"

    def _recipe(self) -> functools.partial[RedisCallLedger]:
        return functools.partial(
            RedisCallLedger,
            self.link.portable(),
            name=self.name,
            timeout=self.link.timeout,
            local=self.local,
            retry_interval=self.link.retry_interval,
            clock=self.link.clock,
        )
