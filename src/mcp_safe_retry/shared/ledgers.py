"""The process's own call ledger: ``CallLedger``, the core's ``LedgerTable`` with the
monotonic clock (the one the transports read) for ``in_doubt``; ``process_ledger()``, the
one every transport uses unless given ``ledger=``; ``process_name()``, this process in a
fleet, which every claim names. A forked child keeps its parent's calls (those the parent
may have run are still held there) behind fresh locks."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from typing import Any

from ..core.call_ledger import LedgerTable, after_fork

__all__ = ["CallLedger", "process_ledger", "process_name"]


class CallLedger(LedgerTable):
    """The UNSAFE tool calls in flight or that may have run, in this process (thread- and
    task-safe): what the duplicate guard holds a repeat against.

    Every transport uses the process's own (``process_ledger()``) unless given one with
    ``ledger=``: pass one ``CallLedger()`` to some transports to keep their calls apart from
    the rest of the process. Shared, never copied: ``copy.deepcopy`` returns this ledger;
    pickled and loaded in another process, it is an empty one there (the process's own if
    it was the process's own). To share one across processes, use
    ``mcp_safe_retry.redis.RedisCallLedger``.

    Args:
        capacity: how many calls are kept (the oldest forgotten first).
        clock: monotonic seconds, as the transports read them (``time.monotonic``).
    """

    def __init__(
        self, capacity: int = 4096, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__(capacity, clock=clock)

    def __reduce__(self) -> tuple[Any, ...]:
        if self is _PROCESS_LEDGER:
            return (process_ledger, ())
        return (CallLedger, (self._capacity,))


_PROCESS_LEDGER = CallLedger()


def process_ledger() -> CallLedger:
    """The process's own ledger: every transport's, unless it was given ``ledger=``."""
    return _PROCESS_LEDGER


def process_name() -> str:
    """This process in a fleet: its host and id (read each time: a forked child is another)."""
    return f"{socket.gethostname()}:{os.getpid()}"


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=after_fork)
