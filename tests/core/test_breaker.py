"""The circuit breaker: when it opens, how long it stays open, probes, and keys per server."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_safe_retry import Breaker, CircuitBreaker
from mcp_safe_retry.core.breaker import BreakerSettings, Circuits, CircuitState, circuit_open
from mcp_safe_retry.records import Layer, Outcome

A = "https://a.test/mcp"
B = "https://b.test/mcp"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(**kwargs: float) -> tuple[CircuitBreaker, Clock]:
    clock = Clock()
    return CircuitBreaker(clock=clock, **kwargs), clock  # type: ignore[arg-type]


def test_opens_after_consecutive_failures_and_only_for_that_server() -> None:
    breaker, _ = make()
    for _ in range(4):
        breaker.record(A, failed=True)
    assert breaker.allow(A)
    breaker.record(A, failed=True)
    assert not breaker.allow(A) and breaker.state(A) is CircuitState.OPEN
    assert breaker.allow(B) and breaker.state(B) is CircuitState.CLOSED


def test_a_success_resets_the_run_of_failures() -> None:
    breaker, _ = make(min_calls=1000)
    for _ in range(10):
        for _ in range(4):
            breaker.record(A, failed=True)
        breaker.record(A, failed=False)
    assert breaker.allow(A)


def test_opens_on_a_failure_ratio_over_the_window() -> None:
    breaker, clock = make(failure_threshold=100, failure_ratio=0.5, min_calls=10, window=10)
    for i in range(9):
        breaker.record(A, failed=i % 2 == 0)  # 5 failures in 9 calls: too few calls yet
    assert breaker.allow(A)
    breaker.record(A, failed=True)  # 6 of 10
    assert not breaker.allow(A)
    # the same share spread over more than the window never opens it
    breaker, clock = make(failure_threshold=100, failure_ratio=0.5, min_calls=10, window=10)
    for i in range(40):
        clock.now += 2.0
        breaker.record(A, failed=i % 2 == 0)
    assert breaker.allow(A)


def test_half_open_lets_bounded_probes_and_a_success_closes() -> None:
    breaker, clock = make(open_for=30, probes=2)
    for _ in range(5):
        breaker.record(A, failed=True)
    clock.now += 29.9
    assert not breaker.allow(A) and breaker.retry_in(A) == pytest.approx(0.1)
    clock.now += 0.1
    assert breaker.state(A) is CircuitState.HALF_OPEN
    assert [breaker.allow(A) for _ in range(3)] == [True, True, False]
    breaker.record(A, failed=False)
    assert breaker.state(A) is CircuitState.CLOSED and breaker.allow(A)


def test_a_failed_probe_opens_again_and_a_lost_probe_frees_its_slot() -> None:
    breaker, clock = make(open_for=30)
    for _ in range(5):
        breaker.record(A, failed=True)
    clock.now += 30
    assert breaker.allow(A) and not breaker.allow(A)
    breaker.record(A, failed=True)
    assert breaker.state(A) is CircuitState.OPEN and breaker.retry_in(A) == 30
    clock.now += 30
    assert breaker.allow(A)  # a probe that never reports...
    clock.now += 30
    assert breaker.allow(A)  # ...frees its slot after open_for


def test_retry_after_extends_the_open_time_up_to_a_cap() -> None:
    breaker, _ = make(open_for=30, max_open_for=120)
    for _ in range(4):
        breaker.record(A, failed=True)
    breaker.record(A, failed=True, retry_after=90)
    assert breaker.retry_in(A) == 90
    breaker.record(A, failed=True, retry_after=10_000)  # a late failure asks for longer
    assert breaker.retry_in(A) == 120
    breaker.record(B, failed=True, retry_after=5)
    for _ in range(4):
        breaker.record(B, failed=True)
    assert breaker.retry_in(B) == 30  # a shorter Retry-After never shortens open_for


def test_circuits_beyond_max_servers_are_forgotten() -> None:
    breaker = CircuitBreaker(max_servers=2, failure_threshold=1)
    for key in ("https://1.test/", "https://2.test/", "https://3.test/"):
        breaker.record(key, failed=True)
    assert breaker.allow("https://1.test/") and not breaker.allow("https://3.test/")


@pytest.mark.anyio
async def test_async_shells_get_the_same_answer() -> None:
    breaker, _ = make(failure_threshold=1)
    assert isinstance(breaker, Breaker)
    breaker.record(A, failed=True)
    assert not await breaker.allow_async(A) and await breaker.allow_async(B)


def test_circuit_open_verdict() -> None:
    verdict = circuit_open("https://a.test/mcp", 2.5)
    assert verdict.outcome is Outcome.CIRCUIT_OPEN and verdict.layer is Layer.TRANSPORT
    assert verdict.detail == "circuit open for https://a.test/mcp (next probe in 2.5s)"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"failure_threshold": 0},
        {"failure_ratio": 0},
        {"failure_ratio": 1.5},
        {"open_for": 0},
        {"open_for": 10, "max_open_for": 5},
        {"probes": 0},
        {"window": float("nan")},
    ],
)
def test_settings_validation(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        BreakerSettings(**kwargs)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["record-ok", "record-fail", "allow", "tick"]),
            st.floats(0, 40),
        ),
        max_size=80,
    )
)
def test_never_sends_while_open_and_never_more_probes_than_allowed(
    steps: list[tuple[str, float]],
) -> None:
    breaker, clock = make(open_for=10, probes=2, min_calls=4, window=5)
    let_through = 0  # half-open requests allowed since the clock or the circuit last moved
    for action, value in steps:
        state = breaker.state(A)
        if action == "tick":
            clock.now += value
            let_through = 0
        elif action == "allow":
            allowed = breaker.allow(A)
            assert allowed is (state is CircuitState.CLOSED) or state is CircuitState.HALF_OPEN
            let_through += allowed and state is CircuitState.HALF_OPEN
            assert let_through <= 2
        else:
            breaker.record(A, failed=action == "record-fail", retry_after=value)
            let_through = 0


# -- what each trigger counts: attempts for the run, calls for the ratio (issue 19) ------


def test_failures_a_retry_rescued_never_open_the_ratio() -> None:
    breaker, clock = make()  # the defaults
    for _ in range(1000):  # each call: a failed attempt, then its retry's success
        clock.now += 0.01
        breaker.record(A, failed=True, ends_call=False)
        breaker.record(A, failed=False)
    assert breaker.state(A) is CircuitState.CLOSED and breaker.allow(A)


def test_the_ratio_counts_each_call_that_ended_failed_once() -> None:
    breaker, _ = make(failure_threshold=100, failure_ratio=0.5, min_calls=10)
    for i in range(9):  # 9 calls ended, 5 of them failed after two failed retries
        if i % 2 == 0:
            breaker.record(A, failed=True, ends_call=False)
            breaker.record(A, failed=True, ends_call=False)
        breaker.record(A, failed=i % 2 == 0)
    assert breaker.allow(A)  # 19 attempts, 15 failed, but only 9 calls: too few yet
    breaker.record(A, failed=True)  # the 10th call, failed: 6 of 10
    assert breaker.state(A) is CircuitState.OPEN


def test_the_run_of_failures_counts_attempts() -> None:
    breaker, _ = make()
    for _ in range(4):
        breaker.record(A, failed=True, ends_call=False)
    assert breaker.allow(A)
    breaker.record(A, failed=True, ends_call=False)  # the 5th failed attempt in a row
    assert breaker.state(A) is CircuitState.OPEN


def test_a_probe_that_a_retry_would_follow_still_decides_the_circuit() -> None:
    breaker, clock = make(open_for=10)
    for _ in range(5):
        breaker.record(A, failed=True)
    clock.now += 10
    assert breaker.allow(A)
    breaker.record(A, failed=True, ends_call=False)  # the probe failed: open again
    assert breaker.state(A) is CircuitState.OPEN
    clock.now += 10
    assert breaker.allow(A)
    breaker.record(A, failed=False, ends_call=True)
    assert breaker.state(A) is CircuitState.CLOSED


def test_circuits_read_the_clock_handed_in_and_the_public_breaker_the_system_s() -> None:
    clock = Clock()
    circuits = Circuits(BreakerSettings(failure_threshold=1, open_for=5.0), clock=clock)
    circuits.record(A, failed=True)
    assert circuits.retry_in(A) == 5.0
    clock.now += 5.0
    assert circuits.allow(A) and circuits.state(A) is CircuitState.HALF_OPEN
    assert repr(circuits) == "Circuits(servers=1, not_closed=1)"
    public = CircuitBreaker(open_for=7.0)
    assert isinstance(public, Circuits) and public.clock is time.monotonic
    assert public.settings == BreakerSettings(open_for=7.0)
    assert repr(public) == "CircuitBreaker(servers=0, not_closed=0)"


def test_recent_answers_tell_a_read_that_follows_one() -> None:
    from mcp_safe_retry.core.breaker import FOLLOW_UP_WINDOW, RecentAnswers

    answers = RecentAnswers(max_servers=2)
    assert not answers.follows("a", 10.0)
    answers.answered("a", 10.0)
    assert answers.follows("a", 10.0 + FOLLOW_UP_WINDOW)
    assert not answers.follows("a", 10.1 + FOLLOW_UP_WINDOW)
    assert not answers.follows("b", 10.0)
    answers.answered("b", 11.0)
    answers.answered("c", 12.0)  # a third server: the table starts over
    assert answers.follows("c", 12.0) and not answers.follows("a", 12.0)
