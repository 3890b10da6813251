"""What one sent POST tells the retry budget and the circuit breaker (core/tally.py), and the
wait an answer's Retry-After asks for."""

from __future__ import annotations

from mcp_safe_retry import CircuitBreaker, RetryBudget
from mcp_safe_retry.core.commands import Ask
from mcp_safe_retry.core.events import Head
from mcp_safe_retry.core.outcomes import verdict
from mcp_safe_retry.core.tally import asked_wait, counted, refund, tally, told
from mcp_safe_retry.records import Outcome
from tests.core.drive import engine

FAILED = verdict(Outcome.HTTP_ERROR, status=503)
ANSWERED = verdict(Outcome.TOOL_SUCCESS)
KEY = "http://h/mcp"


def test_a_transient_failure_is_counted_failed_an_answer_succeeded() -> None:
    budget = RetryBudget(burst=2, per_success=0.5)
    e = engine(budget=budget)
    assert budget.allow_retry() and budget.allow_retry()
    tally(e, None, FAILED, None, ends_call=True)
    assert budget.tokens == 0.0  # a failure alone costs nothing
    tally(e, None, ANSWERED, None, ends_call=True)
    assert budget.tokens == 0.5  # a success earns half a retry back
    tally(e, None, verdict(Outcome.HTTP_ERROR, status=400), None, ends_call=True)
    assert budget.tokens == 1.0  # not transient: counted as no failure
    counted(e, True)
    assert budget.tokens == 1.0
    counted(e, False)
    assert budget.tokens == 1.5


def test_the_breaker_asked_before_a_post_is_told_how_it_ended() -> None:
    breaker = CircuitBreaker(failure_threshold=2)
    admit = Ask(breaker, KEY)
    told(admit, True, None, ends_call=False)
    assert breaker.allow(KEY)
    told(admit, True, None, ends_call=True)
    assert not breaker.allow(KEY)  # two failures in a row open it
    told(None, True, None, ends_call=True)  # no breaker: nothing to tell


def test_tally_counts_with_both() -> None:
    budget = RetryBudget(burst=1)
    breaker = CircuitBreaker(failure_threshold=1)
    e = engine(budget=budget, breaker=breaker)
    tally(e, Ask(breaker, KEY), FAILED, None, ends_call=True)
    assert not breaker.allow(KEY)
    assert budget.tokens == 1.0


def test_a_refund_gives_the_budget_its_token_back() -> None:
    budget = RetryBudget(burst=1)
    e = engine(budget=budget)
    assert budget.allow_retry() and budget.tokens == 0.0
    refund(e)
    assert budget.tokens == 1.0


def test_retry_after_is_read_only_where_its_status_gives_it_weight() -> None:
    def wall() -> float:
        return 1000.0

    assert asked_wait(Head(503, retry_after="2"), wall) == 2.0
    assert asked_wait(Head(429, retry_after="3"), wall) == 3.0
    assert asked_wait(Head(503), wall) is None
    assert asked_wait(Head(200, retry_after="2"), wall) is None


def test_a_redirect_hop_is_counted_once_by_the_request_sent_on() -> None:
    """A 3xx hop feeds the budget nothing and ends no call for the breaker's ratio; it only
    tells the breaker the server answered (its run of failures ends)."""
    budget = RetryBudget(burst=2, per_success=0.5)
    breaker = CircuitBreaker(failure_threshold=2, min_calls=1, failure_ratio=0.5)
    e = engine(budget=budget, breaker=breaker)
    assert budget.allow_retry()
    hop = verdict(Outcome.REDIRECT, status=307)
    tally(e, Ask(breaker, KEY), hop, None, ends_call=True)
    assert budget.tokens == 1.0  # no success credited for the hop
    told(Ask(breaker, KEY), True, None, ends_call=False)  # one failed attempt...
    tally(e, Ask(breaker, KEY), hop, None, ends_call=True)  # ...a hop resets the run
    told(Ask(breaker, KEY), True, None, ends_call=False)
    assert breaker.allow(KEY)  # no two failures in a row, and no call ended by the hop
    tally(e, Ask(breaker, KEY), ANSWERED, None, ends_call=True)  # the Location's answer
    assert budget.tokens == 1.5  # counted once
