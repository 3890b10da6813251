"""Scenarios that break the wire: an SSE stream cut short, a dropped connection, an answer
corrupted after the tool ran."""

from __future__ import annotations

from typing import ClassVar, Literal

import attrs

from mcp_safe_retry.kitchen._actions import (
    ABORT_MODES,
    MALFORMED_KINDS,
    Abort,
    AbortMode,
    Action,
    MalformedKind,
    Mangle,
    Pass,
    Truncate,
)
from mcp_safe_retry.kitchen._facts import RequestFacts
from mcp_safe_retry.kitchen._params import Match, Params, ScenarioError
from mcp_safe_retry.kitchen._scenario_base import WHEN, RunCounters

__all__ = ["ConnectionAbort", "Malformed", "SseTruncated"]


@attrs.frozen
class SseTruncated:
    """An SSE response that ends after `events` notifications, before the response."""

    name: ClassVar[str] = "sse_truncated"
    events: int
    when: Literal["before", "after"]
    mode: Literal["clean", "abrupt"]
    match: Match

    @classmethod
    def read(cls, p: Params) -> SseTruncated:
        """Read `events`, `when` (tool not run / run), `mode` (clean end / drop) and the filter."""
        return cls(
            p.integer("events", 1, minimum=0, maximum=1000),
            p.choice("when", "after", WHEN),
            p.choice("mode", "clean", ("clean", "abrupt")),
            p.match(requests_only=True),
        )

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Truncate the hit POSTs' streams."""
        if run.hit(self.match, facts):
            return Truncate(self.events, self.when == "after", self.mode == "abrupt")
        return Pass()


@attrs.frozen
class ConnectionAbort:
    """The connection drops with no complete response, before or after the tool ran."""

    name: ClassVar[str] = "connection_abort"
    when: Literal["before", "after"]
    mode: AbortMode
    match: Match

    @classmethod
    def read(cls, p: Params) -> ConnectionAbort:
        """Read `when`, `mode` ("close", "reset", "partial") and the match filter."""
        return cls(
            p.choice("when", "before", WHEN), p.choice("mode", "close", ABORT_MODES), p.match()
        )

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Drop the hit POSTs' connections."""
        if run.hit(self.match, facts):
            return Abort(self.when == "after", self.mode)
        return Pass()


@attrs.frozen
class Malformed:
    """The tool runs, then its answer arrives corrupted in the way `kind` names."""

    name: ClassVar[str] = "malformed"
    kind: MalformedKind
    match: Match

    @classmethod
    def read(cls, p: Params) -> Malformed:
        """Read the required `kind` and the match filter (default: first tools/call)."""
        if p.raw("kind") is None:
            raise ScenarioError(f"malformed: 'kind' is required, one of {list(MALFORMED_KINDS)}")
        return cls(p.choice("kind", "invalid_json", MALFORMED_KINDS), p.match(requests_only=True))

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Corrupt the hit POSTs' answers."""
        if run.hit(self.match, facts):
            return Mangle(self.kind)
        return Pass()
