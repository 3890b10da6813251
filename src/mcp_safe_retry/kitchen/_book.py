"""What the kitchen saw and did: the POSTs it answered and the tool bodies it ran.

The book is written from the server's event loop and read from test threads, so every
access takes one lock and readers get frozen snapshots, never live containers.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

JsonId = int | str | None
"""A JSON-RPC id as it appeared on the wire (None when absent or null)."""

_ExecutionKey = tuple[str, str, str | None]
"""(run, tool, caller-given key) of one counted tool execution."""


@attrs.frozen
class PostRecord:
    """One POST to the MCP endpoint and what the kitchen answered.

    Attributes:
        seq: 1-based order of arrival across the whole server (records are written when
            the answer is complete, so a long SSE answer can be logged after later POSTs).
        run: The run the POST belonged to (see `KitchenServer.url_for`).
        scenario: The run's scenario name.
        method: JSON-RPC method of the body, None when the body was not a JSON-RPC message.
        request_id: The wire JSON-RPC id, None for notifications.
        tool: `params.name` of a `tools/call`, else None.
        status: HTTP status sent to the client; None when the connection dropped before one.
        fault: What the kitchen did instead of a plain pass-through (e.g. "rate_limit",
            "malformed:wrong_id", "delay"); None when the real server answered untouched.
        session_id: The request's `Mcp-Session-Id` header.
        protocol_version: The request's `MCP-Protocol-Version` header.
        key: The `key` argument of a `tools/call`: POSTs with the same tool and key are
            copies of one logical call (a retry, a hedge) when the caller uses fresh keys.
        cancelled_id: The request id a `notifications/cancelled` names, so each
            cancellation can be told from another's (a hedge's loser, the SDK's own).
    """

    seq: int
    run: str
    scenario: str
    method: str | None
    request_id: JsonId
    tool: str | None
    status: int | None
    fault: str | None
    session_id: str | None
    protocol_version: str | None
    key: str | None = None
    cancelled_id: JsonId = None

    def to_json(self) -> dict[str, Any]:
        """Return the record as the JSON object `GET /kitchen/state` serves."""
        return {
            "seq": self.seq,
            "run": self.run,
            "scenario": self.scenario,
            "method": self.method,
            "id": self.request_id,
            "tool": self.tool,
            "status": self.status,
            "fault": self.fault,
            "sessionId": self.session_id,
            "protocolVersion": self.protocol_version,
            "key": self.key,
            "cancelledId": self.cancelled_id,
        }


@attrs.frozen
class KitchenState:
    """A snapshot of the book: POSTs seen and tool executions counted.

    Attributes:
        posts: POST records in arrival order (the oldest are dropped past the log limit).
        posts_dropped: How many old records the log limit discarded.
        execution_counts: Executions per (run, tool, key); key is None for tools without one.
    """

    posts: tuple[PostRecord, ...]
    posts_dropped: int
    execution_counts: Mapping[_ExecutionKey, int]

    @property
    def executions(self) -> dict[str, int]:
        """Return how many times each tool body ran, summed over runs and keys."""
        totals: Counter[str] = Counter()
        for (_run, tool, _key), count in self.execution_counts.items():
            totals[tool] += count
        return dict(totals)

    @property
    def executions_by_key(self) -> dict[str, dict[str, int]]:
        """Return executions per tool and caller-given key (tools called with a `key`)."""
        by_key: dict[str, Counter[str]] = {}
        for (_run, tool, key), count in self.execution_counts.items():
            if key is not None:
                by_key.setdefault(tool, Counter())[key] += count
        return {tool: dict(counts) for tool, counts in by_key.items()}

    def for_run(self, run: str) -> KitchenState:
        """Return the part of this snapshot that belongs to one run."""
        return KitchenState(
            posts=tuple(p for p in self.posts if p.run == run),
            posts_dropped=self.posts_dropped,
            execution_counts=MappingProxyType(
                {k: n for k, n in self.execution_counts.items() if k[0] == run}
            ),
        )

    def calls(self, tool: str | None = None, key: str | None = None) -> tuple[PostRecord, ...]:
        """Return the `tools/call` POSTs, optionally only those naming `tool` and `key`."""
        return tuple(
            p
            for p in self.posts
            if p.method == "tools/call"
            and (tool is None or p.tool == tool)
            and (key is None or p.key == key)
        )

    def to_json(self) -> dict[str, Any]:
        """Return the snapshot as the JSON object `GET /kitchen/state` serves."""
        return {
            "executions": self.executions,
            "executionsByKey": self.executions_by_key,
            "posts": [p.to_json() for p in self.posts],
            "postsDropped": self.posts_dropped,
        }


class KitchenBook:
    """The mutable, thread-safe record behind `KitchenState` snapshots."""

    def __init__(self, log_limit: int = 10_000) -> None:
        """Create an empty book keeping at most `log_limit` POST records."""
        if log_limit <= 0:
            raise ValueError("log_limit must be positive")
        self._lock = threading.Lock()
        self._posts: deque[PostRecord] = deque(maxlen=log_limit)
        self._dropped = 0
        self._seq = 0
        self._executions: Counter[_ExecutionKey] = Counter()

    def next_seq(self) -> int:
        """Number a POST on arrival."""
        with self._lock:
            self._seq += 1
            return self._seq

    def record_post(
        self,
        *,
        seq: int,
        run: str,
        scenario: str,
        method: str | None,
        request_id: JsonId,
        tool: str | None,
        status: int | None,
        fault: str | None,
        session_id: str | None,
        protocol_version: str | None,
        key: str | None = None,
        cancelled_id: JsonId = None,
    ) -> PostRecord:
        """Append the record of a POST numbered by `next_seq` and return it."""
        with self._lock:
            record = PostRecord(
                seq=seq,
                run=run,
                scenario=scenario,
                method=method,
                request_id=request_id,
                tool=tool,
                status=status,
                fault=fault,
                session_id=session_id,
                protocol_version=protocol_version,
                key=key,
                cancelled_id=cancelled_id,
            )
            if len(self._posts) == self._posts.maxlen:
                self._dropped += 1
            self._posts.append(record)
            return record

    def record_execution(self, run: str, tool: str, key: str | None = None) -> int:
        """Count one execution of `tool` and return how often it ran for (run, key)."""
        with self._lock:
            self._executions[(run, tool, key)] += 1
            return self._executions[(run, tool, key)]

    def snapshot(self) -> KitchenState:
        """Return a frozen copy of everything recorded so far."""
        with self._lock:
            return KitchenState(
                posts=tuple(sorted(self._posts, key=lambda p: p.seq)),
                posts_dropped=self._dropped,
                execution_counts=MappingProxyType(dict(self._executions)),
            )

    def reset(self) -> None:
        """Forget every record and count."""
        with self._lock:
            self._posts.clear()
            self._dropped = 0
            self._executions.clear()
