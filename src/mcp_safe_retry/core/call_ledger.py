"""The call ledger: every UNSAFE tool call that is in flight or may have run, shared by every
transport of a process (and, through ``mcp_safe_retry.redis.RedisCallLedger``, of a fleet).

A call is written in (``claim``) just before its request leaves, so that an identical call
sent meanwhile, by any client of the process, finds it; it is settled when it ends: an
answer its caller saw, or a request never sent, forgets it (only its own claim: an allowed
twin may have taken the key since); anything else keeps it, with how it ended, for the
window (``RetryPolicy.duplicate_window``): a re-send of it is then held
(``core/guard.py``). Nothing here reads a clock: each caller hands in its own ``now``
(monotonic seconds), and each entry expires ``window`` seconds after it was written.

``mcp_safe_retry.CallLedger`` is this one with the monotonic clock for ``in_doubt``
(``_system``), and the process's own, the one every transport uses unless given ``ledger=``,
is one of those; a forked child keeps its parent's entries (calls the parent may have run
are still held there) behind fresh locks (``after_fork``).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

import attrs

from .duplicate import EarlierCall, LedgerState

_IN_FLIGHT = LedgerState.IN_FLIGHT

__all__ = ["PROCESS", "Ledger", "LedgerEntry", "LedgerTable", "after_fork"]

PROCESS = "process"
"""``decided_by`` of a decision the process's own ledger made."""


@attrs.frozen
class LedgerEntry:
    """One UNSAFE call the ledger keeps: the server it was sent to, its arguments' digest
    (``jsonrpc.Digest``: method, tool and arguments; never the arguments themselves), the
    call, and the seconds it is still kept."""

    server: str
    digest: str
    call: EarlierCall
    expires_in: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "digest": self.digest,
            "expiresIn": round(self.expires_in, 3),
            **self.call.to_dict(),
        }


class Live(Protocol):
    """A call of this process in flight, as the ledger may tell it that its caller stopped
    waiting (the same call was sent again meanwhile: ``LedgerTable.claim``)."""

    def gave_up(self) -> None: ...


class Ledger(Protocol):
    """What a transport's duplicate guard asks of a ledger (``CallLedger``, or a shared one:
    ``mcp_safe_retry.redis.RedisCallLedger``); ``CallLedger`` says what each method does."""

    def claim(
        self, server: str, digest: str, call: EarlierCall, window: float, now: float
    ) -> tuple[EarlierCall | None, str]: ...

    def put(
        self, server: str, digest: str, call: EarlierCall, window: float, now: float
    ) -> str: ...

    def settle(
        self,
        server: str,
        digest: str,
        owner: str,
        call: EarlierCall | None,
        *,
        window: float,
        now: float,
    ) -> None: ...

    def look(self, server: str, digest: str, now: float) -> EarlierCall | None: ...

    def live(self, owner: str, call: Live | None) -> None: ...

    def in_doubt(self, now: float | None = None) -> list[LedgerEntry]: ...

    def resolve(self, server: str, digest: str, *, ran: bool) -> bool: ...


class LedgerTable:
    """The UNSAFE tool calls in flight or that may have run, per server and digest
    (thread-safe; shared, never copied: ``copy.deepcopy`` returns this ledger).

    Args:
        capacity: how many calls are kept (the oldest forgotten first).
        clock: monotonic seconds, the transports' own (for ``in_doubt``; the other methods
            are handed the caller's ``now``).
    """

    def __init__(self, capacity: int = 4096, *, clock: Callable[[], float]) -> None:
        if type(capacity) is not int or isinstance(capacity, bool) or capacity < 1:
            raise ValueError(f"capacity must be a positive int, got {capacity!r}")
        if not callable(clock):
            raise TypeError(f"clock must be a function, got {clock!r}")
        self._capacity = capacity
        self._clock = clock
        # (server, digest) -> (expires at: the writer's clock, the call, its window)
        self._calls: OrderedDict[tuple[str, str], tuple[float, EarlierCall, float]] = OrderedDict()
        self._live: weakref.WeakValueDictionary[str, Live] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()
        _ledgers.add(self)

    def __len__(self) -> int:
        """How many calls are kept now (expired ones included until the next look)."""
        return len(self._calls)

    def __bool__(self) -> bool:
        return True  # a ledger, empty or not: ``ledger or default`` must never drop it

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {len(self._calls)} call(s)>"

    def __copy__(self) -> LedgerTable:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> LedgerTable:
        return self

    def claim(
        self, server: str, digest: str, call: EarlierCall, window: float, now: float
    ) -> tuple[EarlierCall | None, str]:
        """Write ``call`` in as in flight, unless a call with the same server and digest is
        kept: then that one, and nothing written. The second value names who decided.

        A call of this process found in flight is being sent again: its caller most likely
        stopped waiting for it (an SDK's own timeout that tells the server nothing, as
        mcp 1.x's), so its answer, when it comes, is kept for a re-send to join."""
        key = (server, digest)
        with self._lock:
            self._expire(now)
            found = self._calls.get(key)
            if found is None:
                self._write(key, call, now, window)
                return None, PROCESS
            live = self._live.get(found[1].owner) if found[1].state is _IN_FLIGHT else None
        if live is not None:
            live.gave_up()
        return found[1], PROCESS

    def live(self, owner: str, call: Live | None) -> None:
        """The call ``owner`` claimed is in flight in this process (``call``), or is over."""
        with self._lock:
            if call is None:
                self._live.pop(owner, None)
            else:
                self._live[owner] = call

    def put(self, server: str, digest: str, call: EarlierCall, window: float, now: float) -> str:
        """Write ``call`` in whatever is kept (a twin sent with consent, or only labelled: it
        is the newest call of the key); returns who wrote it."""
        with self._lock:
            self._expire(now)
            self._write((server, digest), call, now, window)
        return PROCESS

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
        sent) forgets it, if the key is still its own; else ``call`` is kept, as it ended."""
        key = (server, digest)
        with self._lock:
            if call is None:
                found = self._calls.get(key)
                if found is not None and found[1].owner == owner:
                    del self._calls[key]
                return
            self._write(key, call, now, window)
            self._expire(now)

    def look(self, server: str, digest: str, now: float) -> EarlierCall | None:
        """The call kept for this server and digest, if any."""
        if not self._calls:
            return None
        with self._lock:
            self._expire(now)
            found = self._calls.get((server, digest))
        return None if found is None else found[1]

    def in_doubt(self, now: float | None = None) -> list[LedgerEntry]:
        """The calls kept that may have run, or are running (not those resolved as ran),
        oldest first; ``now``: the transports' clock (the ledger's own by default)."""
        now = self._clock() if now is None else now
        with self._lock:
            self._expire(now)
            return [
                LedgerEntry(server, digest, call, expires - now)
                for (server, digest), (expires, call, _) in self._calls.items()
                if call.state is not LedgerState.RAN
            ]

    def resolve(self, server: str, digest: str, *, ran: bool) -> bool:
        """A person's verdict on a call kept: it did not run (forgotten: the same call may be
        sent again), or it ran (kept for the rest of its window, no longer in doubt).
        False when no such call is kept."""
        if not isinstance(ran, bool):
            raise TypeError(f"ran must be True or False, got {ran!r}")
        key = (server, digest)
        with self._lock:
            found = self._calls.get(key)
            if found is None:
                return False
            if ran:
                self._calls[key] = (
                    found[0],
                    attrs.evolve(found[1], state=LedgerState.RAN),
                    found[2],
                )
            else:
                del self._calls[key]
        return True

    def clear(self) -> None:
        """Forget every call (tests, and a person starting over)."""
        with self._lock:
            self._calls.clear()

    def _write(self, key: tuple[str, str], call: EarlierCall, now: float, window: float) -> None:
        """Keep ``call`` under ``key`` as the newest, for ``window`` seconds (lock held)."""
        calls = self._calls
        calls[key] = (now + window, call, window)
        calls.move_to_end(key)
        while len(calls) > self._capacity:
            calls.popitem(last=False)

    def _expire(self, now: float) -> None:
        """Forget the calls whose window is over (lock held), save one this process still
        has in flight: it is still running, so it is kept for another window. Entries are
        kept in the order they were written, and most windows are the same: the first one
        still kept ends the look."""
        calls = self._calls
        while calls:
            expires = next(iter(calls.values()))[0]
            if expires > now:
                return
            key, (_, call, window) = calls.popitem(last=False)
            if call.state is _IN_FLIGHT and call.owner in self._live:
                self._write(key, call, now, window)

    def _after_fork(self) -> None:
        self._lock = threading.Lock()


_ledgers: weakref.WeakSet[LedgerTable] = weakref.WeakSet()


def after_fork() -> None:
    """In a forked child: every ledger gets a fresh lock (a parent's thread may have held
    one as it forked); ``_system`` registers this with ``os.register_at_fork``."""
    for ledger in list(_ledgers):
        ledger._after_fork()
