"""What every scenario is and shares: the ``Scenario`` protocol, the counters of a run it
advances (``RunCounters``), and the JSON-RPC error replies several of them send.

Deciding is pure apart from the run's counters it advances; no scenario touches a socket or
a clock it was not handed.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, ClassVar, Literal, Protocol

import attrs

from mcp_safe_retry.kitchen._actions import Action, Reply
from mcp_safe_retry.kitchen._facts import RequestFacts
from mcp_safe_retry.kitchen._params import Match

__all__ = [
    "JSON_HEADERS",
    "SESSION_NOT_FOUND",
    "WHEN",
    "RunCounters",
    "Scenario",
    "jsonrpc_error",
    "session_not_found",
]

JSON_HEADERS = (("content-type", "application/json"),)
SESSION_NOT_FOUND = -32600
WHEN: tuple[Literal["before", "after"], ...] = ("before", "after")


@attrs.define
class RunCounters:
    """The mutable counters of one run that scenarios advance.

    Attributes:
        posts: Every POST of the run so far, this one included.
        matched: POSTs the scenario's `Match` selected so far.
        session_posts: POSTs seen per `Mcp-Session-Id`.
        expired: Session ids the kitchen declared expired.
        dropped: Session ids the kitchen ended inside the real server.
    """

    posts: int = 0
    matched: int = 0
    session_posts: Counter[str] = attrs.field(factory=Counter)
    expired: set[str] = attrs.field(factory=set)
    dropped: set[str] = attrs.field(factory=set)

    def hit(self, match: Match, facts: RequestFacts) -> bool:
        """Count `facts` against `match` and return whether the fault hits it."""
        if not match.selects(facts):
            return False
        self.matched += 1
        return match.hits(self.matched)


class Scenario(Protocol):
    """A named fault, configured once per run, deciding what happens to each POST."""

    name: ClassVar[str]

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Return what to do with this POST (`now` is wall-clock seconds)."""
        ...


def jsonrpc_error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """Return a JSON-RPC error response object."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def session_not_found(request_id: Any) -> Reply:
    """Return the 404 the SDK gives a session it does not know."""
    body = jsonrpc_error(request_id, SESSION_NOT_FOUND, "Session not found")
    return Reply(404, "session_expired", JSON_HEADERS, json.dumps(body).encode())
