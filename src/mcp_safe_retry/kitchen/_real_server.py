"""Scenarios in which the real server answers, on time or late: the baseline (optionally
delayed), the elicitation round trip, and a slow tail whose delay each POST draws."""

from __future__ import annotations

import hashlib
from typing import ClassVar, Literal

import attrs

from mcp_safe_retry.kitchen._actions import Action, Late, Pass
from mcp_safe_retry.kitchen._facts import RequestFacts
from mcp_safe_retry.kitchen._params import Match, Params, ScenarioError
from mcp_safe_retry.kitchen._scenario_base import RunCounters

__all__ = ["MAX_SLOW_TAIL_MS", "Baseline", "ElicitationApproval", "SlowTail"]

MAX_SLOW_TAIL_MS = 10_000
"""The longest delay `latency.slow_tail` adds to one POST."""


@attrs.frozen
class Baseline:
    """The real server, optionally late: `delayMs` before matching POSTs reach it."""

    name: ClassVar[str] = "baseline"
    delay_ms: int
    match: Match

    @classmethod
    def read(cls, p: Params) -> Baseline:
        """Read `delayMs` and the match filter (default: every tools/call)."""
        return cls(p.integer("delayMs", 0, minimum=0, maximum=60_000), p.match(default_times=None))

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Delay matching POSTs, pass everything."""
        if self.delay_ms and run.hit(self.match, facts):
            return Pass(delay_s=self.delay_ms / 1000)
        return Pass()


@attrs.frozen
class ElicitationApproval:
    """The `approve` tool's real elicitation round trip; no fault is injected.

    On 2026-07-28 the SDK answers `resultType: "input_required"` with an elicitation
    form and a sealed `requestState`; before that it sends `elicitation/create` on the
    request's SSE stream (stateful, SSE mode only).
    """

    name: ClassVar[str] = "elicitation.approval"

    @classmethod
    def read(cls, p: Params) -> ElicitationApproval:
        """Take no params."""
        return cls()

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Pass everything: the approval flow is the server's own."""
        return Pass()


@attrs.frozen
class SlowTail:
    """A slow tail: each matching POST draws its own delay, so a copy of a slow request
    (a retry, a hedge) is usually fast.

    On average one matching POST in `slowEvery` waits `slowMs` before it reaches the server;
    the others wait `fastMs` plus up to `jitterMs`. With `pattern` "random" (the default) the
    draw depends only on `seed` and the POST's number among the run's matching POSTs, so a
    run replays exactly; "periodic" makes POSTs number `slowEvery`, `2 * slowEvery`, ... slow.
    A client that leaves during the delay is never served (recorded as
    `slow_tail:<slow|fast>:abandoned`, no status, no tool execution).
    """

    name: ClassVar[str] = "latency.slow_tail"
    slow_every: int
    slow_ms: int
    fast_ms: int
    jitter_ms: int
    pattern: Literal["random", "periodic"]
    seed: int
    match: Match

    @classmethod
    def read(cls, p: Params) -> SlowTail:
        """Read the delays, `pattern`, `seed` and the match filter (default: every tools/call)."""
        tail = cls(
            slow_every=p.integer("slowEvery", 10, minimum=1, maximum=1_000_000),
            slow_ms=p.integer("slowMs", 1000, minimum=0, maximum=MAX_SLOW_TAIL_MS),
            fast_ms=p.integer("fastMs", 0, minimum=0, maximum=MAX_SLOW_TAIL_MS),
            jitter_ms=p.integer("jitterMs", 0, minimum=0, maximum=MAX_SLOW_TAIL_MS),
            pattern=p.choice("pattern", "random", ("random", "periodic")),
            seed=p.integer("seed", 0),
            match=p.match(default_times=None, requests_only=True),
        )
        if tail.fast_ms + tail.jitter_ms > MAX_SLOW_TAIL_MS:
            raise ScenarioError(f"{cls.name}: fastMs + jitterMs must be at most {MAX_SLOW_TAIL_MS}")
        return tail

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Delay the hit POSTs by their own draw."""
        if not run.hit(self.match, facts):
            return Pass()
        slow, delay_ms = self.delay_of(run.matched)
        return Late(delay_ms / 1000, "slow_tail:slow" if slow else "slow_tail:fast")

    def delay_of(self, number: int) -> tuple[bool, int]:
        """Whether matching POST `number` (1-based) is slow, and its delay in ms."""
        digest = hashlib.blake2b(f"{self.seed}:{number}".encode(), digest_size=16).digest()
        draw = int.from_bytes(digest[:8], "big") / 2**64
        jitter = int.from_bytes(digest[8:], "big") % (self.jitter_ms + 1)
        if self.pattern == "periodic":
            slow = number % self.slow_every == 0
        else:
            slow = draw < 1 / self.slow_every
        return slow, self.slow_ms if slow else self.fast_ms + jitter
