"""Scenarios that end a session: the kitchen answers 404 for it (``session_expired``), or the
real server forgets it between two calls (``session_dropped``)."""

from __future__ import annotations

from typing import ClassVar

import attrs

from mcp_safe_retry.kitchen._actions import Action, DropSession, Pass
from mcp_safe_retry.kitchen._facts import RequestFacts
from mcp_safe_retry.kitchen._params import Match, Params
from mcp_safe_retry.kitchen._scenario_base import RunCounters, session_not_found

__all__ = ["SessionDropped", "SessionExpired"]


@attrs.frozen
class SessionExpired:
    """Declare a session expired: its matching POST and everything after it get 404.

    A session expires at the first POST selected by the filter (default: tools/call)
    that arrives after `afterRequests` of its POSTs went through; every POST carrying
    its `Mcp-Session-Id` counts, `notifications/initialized` included. `times` sessions
    expire per run. Requests without `Mcp-Session-Id` (stateless, 2026-07-28) never do.
    """

    name: ClassVar[str] = "session_expired"
    after_requests: int
    match: Match

    @classmethod
    def read(cls, p: Params) -> SessionExpired:
        """Read `afterRequests`, `times` (sessions to expire) and `method`/`tool`."""
        after = p.integer("afterRequests", 0, minimum=0)
        match = Match(
            methods=p.methods("tools/call"),
            tool=p.optional_string("tool"),
            times=p.integer("times", 1, minimum=0),
        )
        return cls(after, match)

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Answer 404 for expired sessions; expire the next one when it is due."""
        session = facts.session_id
        if session is None:
            return Pass()
        if session in run.expired:
            return session_not_found(facts.request_id)
        run.session_posts[session] += 1
        due = run.session_posts[session] > self.after_requests
        if due and self.match.selects(facts) and len(run.expired) < (self.match.times or 0):
            run.expired.add(session)
            return session_not_found(facts.request_id)
        return Pass()


@attrs.frozen
class SessionDropped:
    """The real server forgets a session between two calls: 404 for everything after.

    After the session's `afterCalls`-th POST selected by the filter (default: tools/call)
    has been answered, the kitchen ends the session inside the real server. The next
    request carrying its `Mcp-Session-Id` (POST, GET or DELETE) gets the server's own 404
    "Session not found", exactly as from a server that expired the session; a new
    `initialize` opens a new one. `times` sessions are dropped per run. Requests without
    `Mcp-Session-Id` (stateless, 2026-07-28) never are.
    """

    name: ClassVar[str] = "session_dropped"
    after_calls: int
    match: Match

    @classmethod
    def read(cls, p: Params) -> SessionDropped:
        """Read `afterCalls`, `times` (sessions to drop) and `method`/`tool`."""
        after = p.integer("afterCalls", 1, minimum=1)
        match = Match(
            methods=p.methods("tools/call"),
            tool=p.optional_string("tool"),
            times=p.integer("times", 1, minimum=0),
            requests_only=True,
        )
        return cls(after, match)

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Pass everything; drop the session once its selected POSTs reach the count."""
        session = facts.session_id
        if session is None or session in run.dropped or not self.match.selects(facts):
            return Pass()
        run.session_posts[session] += 1
        due = run.session_posts[session] >= self.after_calls
        if due and len(run.dropped) < (self.match.times or 0):
            run.dropped.add(session)
            return DropSession()
        return Pass()
