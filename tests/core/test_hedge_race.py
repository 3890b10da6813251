"""The race between a hedged call's copies (core/hedge_race.py): which calls may be hedged,
the race by table and by property, and the latency window an adaptive delay is read from."""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_safe_retry import Idempotency, RetryPolicy
from mcp_safe_retry.core.hedge_copies import CopyKind, CopyState, Ending
from mcp_safe_retry.core.hedge_race import Race, Standing, Step, may_hedge
from mcp_safe_retry.core.hedge_settings import MAX_HEDGES, AdaptiveDelay
from mcp_safe_retry.core.latency import LatencyWindow, hedge_delay

READ, UNSAFE = Idempotency.READ, Idempotency.UNSAFE
HEDGED = RetryPolicy(hedge_after=0.1, max_hedges=1, max_retries=2)

# -- which calls may be hedged ------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "method", "request_id", "idempotency", "expected"),
    [
        pytest.param(HEDGED, "tools/call", 1, READ, True, id="read-tool"),
        pytest.param(HEDGED, "resources/read", "r-1", READ, True, id="read-method"),
        pytest.param(HEDGED, "tools/call", 1, UNSAFE, False, id="unsafe-tool"),
        pytest.param(
            HEDGED, "tools/call", 1, Idempotency.IDEMPOTENT, False, id="idempotent-never-hedged"
        ),
        pytest.param(
            HEDGED, "tasks/cancel", 1, Idempotency.IDEMPOTENT, False, id="tasks-cancel-not-hedged"
        ),
        pytest.param(HEDGED, "notifications/progress", None, READ, False, id="notification"),
        pytest.param(HEDGED, "initialize", 0, READ, False, id="initialize"),
        pytest.param(RetryPolicy(), "tools/call", 1, READ, False, id="hedging-off"),
        pytest.param(
            RetryPolicy(hedge_after="adaptive"), "tools/list", 7, READ, True, id="adaptive"
        ),
    ],
)
def test_may_hedge(
    policy: RetryPolicy, method: str, request_id: Any, idempotency: Idempotency, expected: bool
) -> None:
    assert may_hedge(policy, method=method, request_id=request_id, idempotency=idempotency) is (
        expected
    )


def test_race_cap() -> None:
    policy = RetryPolicy(max_retries=2, hedge_after=0.1, max_hedges=3)
    start = {"method": "tools/call", "caller_id": 1, "delay": 0.1, "now": 0}
    assert Race.start(policy, idempotency=READ, **start).cap == 6  # type: ignore[arg-type]
    assert Race.start(policy, idempotency=UNSAFE, **start).cap == 3  # type: ignore[arg-type]


# -- the race, by table ----------------------------------------------------------------------

# A script is a list of events; each event's Step verdict (or None for events that return a
# race) is collected. Events: ("hedge", now) ("retry", now) ("begin", n, now)
# ("commit", n, now) ("end", n, ending, now) ("give_up",) ("abandon",) ("stop",).
Event = tuple[Any, ...]


def play(race: Race, script: Sequence[Event]) -> tuple[Race, list[Step]]:
    steps: list[Step] = []
    fresh = (f"h-{i}" for i in range(100))
    for event in script:
        match event:
            case ("hedge", now):
                race = race.hedge(now, next(fresh))
            case ("retry", now):
                race = race.retry(now, next(fresh))
            case ("begin", number, now):
                race = race.begun(number, now)
            case ("commit", number, now):
                step = race.commit(number, now)
                steps.append(step)
                race = step.race
            case ("end", number, ending, now):
                step = race.ended(number, ending, now)
                steps.append(step)
                race = step.race
            case ("give_up",):
                step = race.give_up()
                steps.append(step)
                race = step.race
            case ("abandon",):
                step = race.abandon()
                steps.append(step)
                race = step.race
            case ("stop",):
                race = race.stop_hedging()
            case _:
                raise AssertionError(event)
    return race, steps


def start(policy: RetryPolicy = HEDGED, idempotency: Idempotency = READ, **kw: Any) -> Race:
    delay = kw.pop("delay", 0.1)
    return Race.start(
        policy, method="tools/call", caller_id=7, idempotency=idempotency, delay=delay, now=0.0
    )


S, F, T = Ending.SUCCESS, Ending.FINAL, Ending.TRANSIENT
W, L, X, A = CopyState.WON, CopyState.LOST, CopyState.FAILED, CopyState.ABANDONED
IN = CopyState.IN_FLIGHT


@pytest.mark.parametrize(
    ("script", "verdicts", "states", "cancelled"),
    [
        pytest.param([("end", 1, S, 0.05)], ["win"], [W], [], id="first-answers-in-time"),
        pytest.param([("hedge", 0.1), ("end", 2, S, 0.15)], ["win"], [L, W], [1], id="hedge-wins"),
        pytest.param(
            [("hedge", 0.1), ("end", 1, S, 0.12)], ["win"], [W, L], [2], id="first-wins-late"
        ),
        pytest.param(
            [("hedge", 0.1), ("end", 1, T, 0.12), ("end", 2, S, 0.2)],
            ["wait", "win"],
            [X, W],
            [],
            id="transient-lets-the-other-finish",
        ),
        pytest.param(
            [("hedge", 0.1), ("end", 1, F, 0.12)],
            ["win"],
            [W, L],
            [2],
            id="tool-error-is-the-answer",
        ),
        pytest.param(
            [("hedge", 0.1), ("end", 2, F, 0.12)],
            ["win"],
            [L, W],
            [1],
            id="hedge-error-is-the-answer",
        ),
        pytest.param(
            [("hedge", 0.1), ("end", 1, S, 0.12), ("end", 2, S, 0.13)],
            ["win", "discard"],
            [W, L],
            [2],
            id="late-answer-dropped",
        ),
        pytest.param(
            [("hedge", 0.1), ("end", 2, T, 0.12), ("end", 1, T, 0.2)],
            ["wait", "exhausted"],
            [X, X],
            [],
            id="all-transient-exhausted",
        ),
        pytest.param(
            [("hedge", 0.1), ("end", 2, T, 0.12), ("end", 1, T, 0.2), ("give_up",)],
            ["wait", "exhausted", "win"],
            [W, X],
            [],
            id="give-up-last-failure-answers",
        ),
        pytest.param(
            [("end", 1, T, 0.01), ("retry", 0.3), ("end", 2, S, 0.35)],
            ["exhausted", "win"],
            [X, W],
            [],
            id="retry-after-quick-failure",
        ),
        pytest.param(
            [("hedge", 0.1), ("commit", 2, 0.12), ("end", 2, S, 0.5)],
            ["wait", "win"],
            [L, W],
            [1],
            id="stream-begun-commits",
        ),
        pytest.param(
            [("hedge", 0.1), ("commit", 1, 0.12), ("end", 1, T, 0.5), ("retry", 0.7)],
            ["wait", "exhausted"],
            [X, L, IN],
            [2],
            id="committed-stream-breaks-then-retry",
        ),
        pytest.param(
            [("hedge", 0.1), ("abandon",)], ["discard"], [A, A], [1, 2], id="caller-gives-up"
        ),
        pytest.param(
            [("hedge", 0.1), ("abandon",), ("end", 1, S, 0.3)],
            ["discard", "discard"],
            [A, A],
            [1, 2],
            id="answer-after-abandon",
        ),
    ],
)
def test_race_table(
    script: list[Event],
    verdicts: list[str],
    states: list[CopyState],
    cancelled: list[int],
) -> None:
    race, steps = play(start(), script)
    assert [str(s.standing) for s in steps] == verdicts
    assert [c.state for c in race.copies] == states
    assert sorted(c.number for s in steps for c in s.cancel) == cancelled
    assert all(s.reply_id == 7 for s in steps if s.standing is Standing.WIN)
    assert sum(1 for c in race.copies if c.state is CopyState.WON) <= 1


@pytest.mark.parametrize(
    ("policy", "idempotency", "delay", "script", "due"),
    [
        pytest.param(HEDGED, READ, 0.1, [], 0.1, id="first-hedge-after-delay"),
        pytest.param(HEDGED, UNSAFE, 0.1, [], None, id="unsafe-never"),
        pytest.param(HEDGED, READ, None, [], None, id="no-delay-given"),
        pytest.param(RetryPolicy(), READ, 0.1, [], None, id="policy-off"),
        pytest.param(HEDGED, READ, 0.1, [("begin", 1, 0.05)], None, id="answer-begun"),
        pytest.param(HEDGED, READ, 0.1, [("hedge", 0.1)], None, id="hedges-used-up"),
        pytest.param(HEDGED, READ, 0.1, [("stop",)], None, id="budget-said-no"),
        pytest.param(
            attrs.evolve(HEDGED, max_hedges=2),
            READ,
            0.1,
            [("hedge", 0.1)],
            pytest.approx(0.2),
            id="second-hedge-after-another-delay",
        ),
        pytest.param(HEDGED, READ, 0.1, [("end", 1, T, 0.01)], None, id="retry-decision-pending"),
        pytest.param(
            HEDGED,
            READ,
            0.1,
            [("end", 1, T, 0.01), ("retry", 0.5)],
            pytest.approx(0.6),
            id="retry-is-hedged-too",
        ),
        pytest.param(
            attrs.evolve(HEDGED, max_retries=0),
            READ,
            0.1,
            [("hedge", 0.1)],
            None,
            id="cap-reached",
        ),
        pytest.param(HEDGED, READ, 0.1, [("end", 1, S, 0.05)], None, id="settled"),
    ],
)
def test_hedge_at(
    policy: RetryPolicy,
    idempotency: Idempotency,
    delay: float | None,
    script: list[Event],
    due: Any,
) -> None:
    race, _ = play(start(policy, idempotency, delay=delay), script)
    assert race.hedge_at() == due


def test_a_hedge_before_its_time_is_refused() -> None:
    race = start()
    with pytest.raises(ValueError, match="no hedge is due"):
        race.hedge(0.09, "h")
    with pytest.raises(ValueError, match="not fresh"):
        race.hedge(0.1, 7)  # the caller's id is still in flight
    with pytest.raises(ValueError, match="every copy failed"):
        race.retry(0.2, "r")


def test_copies_are_found_by_wire_id() -> None:
    race = start().hedge(0.1, "h-1")
    first, hedge = race.copies
    assert race.copy_for(7) is first and race.copy_for("h-1") is hedge
    assert race.copy_for("7") is None and race.copy_for(True) is None
    assert (first.kind, hedge.kind) == (CopyKind.FIRST, CopyKind.HEDGE)
    with pytest.raises(ValueError, match="no copy"):
        race.copy(3)


def test_a_copy_cannot_end_twice() -> None:
    step = start().hedge(0.1, "h").ended(1, T, 0.2)
    with pytest.raises(ValueError, match="ended already"):
        step.race.ended(1, S, 0.3)


@pytest.mark.parametrize(
    ("script", "now", "samples"),
    [
        pytest.param([("end", 1, S, 0.05)], 0.05, [(1, 0.05, False)], id="plain"),
        pytest.param(
            [("begin", 1, 0.03), ("end", 1, S, 0.5)], 0.5, [(1, 0.03, False)], id="head-counts"
        ),
        pytest.param(
            [("hedge", 0.1), ("end", 2, S, 0.14)],
            0.14,
            [(1, 0.14, True), (2, 0.04, False)],
            id="hedge-wins-from-its-own-post-first-censored",
        ),
        pytest.param(
            [("hedge", 0.1), ("end", 1, S, 0.12)],
            0.12,
            [(1, 0.12, False), (2, 0.02, True)],
            id="first-wins-hedge-censored",
        ),
        pytest.param(
            [("hedge", 0.1), ("begin", 1, 0.11), ("end", 2, S, 0.13)],
            0.13,
            [(1, 0.11, False), (2, 0.03, False)],
            id="a-loser-whose-head-came-is-answered",
        ),
        pytest.param(
            [("hedge", 0.1), ("commit", 2, 0.13)],
            0.13,
            [(1, 0.13, True), (2, 0.03, False)],
            id="stream-committed",
        ),
        pytest.param([("end", 1, F, 0.05)], 0.05, [], id="failure"),
        pytest.param(
            [("end", 1, T, 0.01), ("retry", 0.2), ("end", 2, S, 0.3)],
            0.3,
            [(2, 0.1, False)],
            id="retry-counts-its-own-copy",
        ),
        pytest.param([("abandon",)], 1.0, [], id="abandoned"),
        pytest.param([], 1.0, [], id="unsettled"),
    ],
)
def test_latency_samples(
    script: list[Event], now: float, samples: list[tuple[int, float, bool]]
) -> None:
    race, _ = play(start(), script)
    got = race.samples(now)
    assert [(s.copy, s.censored) for s in got] == [(c, censored) for c, _, censored in samples]
    assert [s.seconds for s in got] == pytest.approx([t for _, t, _ in samples])


# -- the race, by property -----------------------------------------------------------------

OPS = st.lists(
    st.tuples(
        st.sampled_from(["hedge", "end", "begin", "commit", "retry", "give_up", "abandon", "stop"]),
        st.integers(1, 8),
        st.sampled_from(list(Ending)),
        st.floats(0.0, 0.3),
    ),
    max_size=40,
)


@settings(max_examples=400, deadline=None)
@given(
    ops=OPS,
    max_retries=st.integers(0, 3),
    max_hedges=st.integers(1, MAX_HEDGES),
    idempotency=st.sampled_from(list(Idempotency)),
    caller_id=st.one_of(st.integers(-5, 5), st.text(max_size=3)),
)
def test_race_invariants(
    ops: list[tuple[str, int, Ending, float]],
    max_retries: int,
    max_hedges: int,
    idempotency: Idempotency,
    caller_id: int | str,
) -> None:
    """Whatever happens: never more POSTs than the cap, an UNSAFE call is never hedged, at most
    one winner (exactly one once settled by an answer), distinct wire ids, the caller's id."""
    policy = RetryPolicy(max_retries=max_retries, hedge_after=0.1, max_hedges=max_hedges)
    cap = 1 + max_retries + (max_hedges if idempotency is READ else 0)
    race = Race.start(
        policy, method="tools/call", caller_id=caller_id, idempotency=idempotency, delay=0.1, now=0
    )
    now = 0.0
    for fresh, (op, number, ending, dt) in enumerate(ops):
        now += dt
        try:
            if op == "hedge":
                race = race.hedge(now, f"wire-{fresh}")
            elif op == "retry":
                race = race.retry(now, f"wire-{fresh}")
            elif op == "begin":
                race = race.begun(number, now)
            elif op == "commit":
                step = race.commit(number, now)
                assert len(step.race.in_flight) == 1 and step.standing is Standing.WAIT
                race = step.race
            elif op == "stop":
                race = race.stop_hedging()
            else:
                step = (
                    race.ended(number, ending, now)
                    if op == "end"
                    else race.give_up()
                    if op == "give_up"
                    else race.abandon()
                )
                if step.standing is Standing.WIN:
                    assert step.reply_id == caller_id
                    assert all(c.state is CopyState.LOST for c in step.cancel)
                race = step.race
        except ValueError:
            pass  # an event the rules refuse leaves the race as it was
        check(race, cap, idempotency, caller_id)
    # Finish the call: every copy still in flight answers; the call must settle once.
    while not race.settled:
        if race.in_flight:
            race = race.ended(race.in_flight[0].number, Ending.SUCCESS, now).race
        else:
            race = race.give_up().race
        check(race, cap, idempotency, caller_id)
    assert race.abandoned or sum(c.state is CopyState.WON for c in race.copies) == 1


def check(race: Race, cap: int, idempotency: Idempotency, caller_id: int | str) -> None:
    assert len(race.copies) <= cap
    assert race.retries <= race.max_retries
    if idempotency is UNSAFE:
        assert race.hedges == 0 and race.hedge_at() is None
    won = [c for c in race.copies if c.state is CopyState.WON]
    assert len(won) <= 1
    assert (race.winner is None) == (not won)
    if race.settled:
        assert not race.in_flight
    wire = [(type(c.wire_id), c.wire_id) for c in race.copies]
    assert len(set(wire)) == len(wire)
    assert race.copies[0].wire_id == caller_id


# -- the adaptive delay settles near the server's own quantile ----------------------------


def simulate(quantile: float, calls: int, seed: int) -> tuple[list[float], int]:
    """Calls against a server whose POSTs take 10-20 ms, and 1 s one time in ten, hedged at
    an adaptive ``quantile``, each call's samples fed to the window as the engine does;
    returns the delay each call waited before its hedge, and the hedges sent. Simulated
    time only, seeded."""
    rng = random.Random(seed)
    adaptive = AdaptiveDelay(
        quantile=quantile, floor=0.001, ceiling=5.0, initial=0.5, min_samples=20
    )
    policy = RetryPolicy(hedge_after=adaptive, max_retries=0)
    window = LatencyWindow(size=256, refresh=16)
    hedges, delays = 0, []

    def latency() -> float:
        return 1.0 if rng.random() < 0.1 else rng.uniform(0.010, 0.020)

    for _ in range(calls):
        delay = hedge_delay(policy.hedge_after, window)
        assert delay is not None
        delays.append(delay)
        race = Race.start(
            policy, method="tools/call", caller_id=1, idempotency=READ, delay=delay, now=0.0
        )
        first = latency()
        if first > delay:
            race = race.hedge(delay, "h")
            hedges += 1
            second = delay + latency()
            winner = 1 if first <= second else 2
            end = min(first, second)
        else:
            winner, end = 1, first
        race = race.ended(winner, Ending.SUCCESS, end).race
        for sample in race.samples(end):
            window.add(sample.seconds, censored=sample.censored)
    return delays, hedges


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_adaptive_delay_settles_in_the_fast_band_without_creeping(seed: int) -> None:
    """Hedged at p85 with a tenth of the POSTs slow, the delay is the fast band's 94th
    percentile (about 19.4 ms), a fortieth of the slow delay, and stays there: the hedges it
    causes add their own fast latencies and a censored ">= T" for the slow copies they beat,
    never "delay + a fast answer" that would lift the quantile after every hedge."""
    delays, hedges = simulate(0.85, 3000, seed)
    settled = delays[500:]
    assert max(settled) <= 0.025  # never creeps toward the slow band
    assert min(settled) >= 0.017  # nor sinks into the fast band's body
    assert 0.12 * 3000 <= hedges <= 0.2 * 3000  # the slow tenth and the fast band's top


def test_adaptive_delay_reads_the_slow_band_when_it_is_the_quantile() -> None:
    """A tenth of the POSTs slow puts the real 95th percentile in the slow band: an honest
    estimate says so (censored copies count as ">= T", and the slow answers it still sees
    carry their share), so a p95 delay waits about as long as a slow answer and hedges
    almost nothing (a window that happens to hold fewer slow answers than a twentieth
    lowers it for a while). Hedging such a server pays only at a quantile below the slow
    share."""
    delays, hedges = simulate(0.95, 3000, seed=11)
    assert statistics.median(delays[1000:]) >= 0.9
    assert hedges <= 0.1 * 3000
