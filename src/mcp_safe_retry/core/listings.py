"""The last good answer of each list read, served stale when a re-fetch fails.

An SDK reads a server's listings itself, and a failure there fails a call that already ran:
mcp 2.x ``Client.call_tool`` sends its own ``tools/list`` after a ``tools/call`` of a tool
the session never listed (to validate the result against the tool's output schema), and
raises when that read fails, although the tool ran. The 2026-07-28 revision allows what
makes that read safe: "clients MAY serve stale results when a re-fetch fails" (SEP-2549).

So the last good answer of each list read (``LIST_METHODS``) is kept per server, per
request (method and params less ``_meta``: a page's cursor is its own read) and per
authorization context (a hash of the request's ``Authorization``, never the header), unless
the answer says ``cacheScope: "public"``: ``"private"`` entries, and those that say neither,
are never shared across authorization contexts. When a re-fetch fails after its retries
(a transient failure: ``decision.is_transient``), or the circuit breaker holds it back, the
caller gets that answer instead, and the call's record says it was served stale and how old
it was. Answers that succeed are handed on as they came: the SDK's own ``ttlMs`` caching is
the SDK's. The memory is the process's (``ListingCache``, shared by every transport unless
one is handed its own), bounded.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any, NamedTuple

__all__ = ["LIST_METHODS", "ListingCache", "ListingKey", "auth_context"]

LIST_METHODS = frozenset(
    {"tools/list", "prompts/list", "resources/list", "resources/templates/list", "server/discover"}
)
"""The reads whose last good answer is kept, and served stale when a re-fetch fails."""


def auth_context(authorization: str | None) -> str | None:
    """What tells authorization contexts apart: a hash of the ``Authorization`` header
    (None: no header, the anonymous context)."""
    if authorization is None:
        return None
    value = authorization.encode("utf-8", "surrogateescape")
    return hashlib.blake2b(value, digest_size=12).hexdigest()


class ListingKey(NamedTuple):
    """Which read a list call is: its server, its request (``jsonrpc.Digest``) and its
    authorization context (``auth_context``)."""

    server: str
    request: str
    auth: str | None


class _Entry(NamedTuple):
    kept_at: float  # wall-clock Unix time
    result: dict[str, Any]
    public: bool  # cacheScope "public": shared across authorization contexts


class ListingCache:
    """The last good answer of each list read (see the module docstring), the newest
    ``capacity``; safe across threads.

    Args:
        capacity: how many answers are kept (the least recently kept forgotten first).
    """

    def __init__(self, capacity: int = 256) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[tuple[str, str, str | None], _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def keep(self, key: ListingKey, result: dict[str, Any], now: float) -> None:
        """Keep ``result``, the good answer of the read ``key`` names, as of ``now``."""
        public = result.get("cacheScope") == "public"
        entry = _Entry(now, result, public)
        slot: tuple[str, str, str | None]
        with self._lock:
            if public:  # one for every context
                self._entries.pop((key.server, key.request, key.auth), None)
                slot = (key.server, key.request, None)
            else:
                slot = (key.server, key.request, key.auth)
            self._entries[slot] = entry
            self._entries.move_to_end(slot)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)

    def last(self, key: ListingKey, now: float) -> tuple[dict[str, Any], float] | None:
        """The last good answer of the read ``key`` names that its authorization context
        may see, and its age in seconds at ``now``; None if there is none."""
        if not self._entries:
            return None
        with self._lock:
            entry = self._entries.get((key.server, key.request, key.auth))
            if entry is None and key.auth is not None:  # another context's, if public
                shared = self._entries.get((key.server, key.request, None))
                entry = shared if shared is not None and shared.public else None
        if entry is None:
            return None
        return entry.result, max(0.0, now - entry.kept_at)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
