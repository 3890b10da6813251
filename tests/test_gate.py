"""Who asks a budget or a breaker before a POST: the object says itself (``answers_inline``)."""

from __future__ import annotations

import time

from mcp_safe_retry import CircuitBreaker, RetryBudget
from mcp_safe_retry.core.budget import answers_inline
from mcp_safe_retry.core.commands import Consult
from mcp_safe_retry.core.engine import Engine
from mcp_safe_retry.redis import RedisBudget, RedisCircuitBreaker


class _Mine(RetryBudget):
    """A subclass of the local budget: it answers at once, as its base says."""


class _Remote:
    """A budget of the Budget protocol that says nothing: asked by the shell."""

    def record(self, *, failed: bool) -> None: ...

    def allow_retry(self) -> bool:
        return True

    async def allow_retry_async(self) -> bool:
        return True


def _engine(**options: object) -> Engine:
    return Engine(
        clock=time.monotonic,
        wall_clock=time.time,
        rand=lambda: 0.5,
        id_prefix="0a1b2c3d",
        **options,  # type: ignore[arg-type]
    )


def test_local_budgets_and_breakers_say_they_answer_inline() -> None:
    assert answers_inline(RetryBudget()) and answers_inline(RetryBudget.grpc())
    assert answers_inline(CircuitBreaker()) and answers_inline(_Mine())
    assert not answers_inline(_Remote()) and not answers_inline(None)
    assert RedisBudget.answers_inline is False and RedisCircuitBreaker.answers_inline is False


def test_a_subclass_of_the_local_budget_is_asked_by_the_call_itself() -> None:
    assert _engine(budget=_Mine()).ask_budget is None
    assert _engine(breaker=CircuitBreaker()).breaker_inline


def test_a_budget_that_says_nothing_is_asked_by_the_shell() -> None:
    remote = _Remote()
    assert _engine(budget=remote).ask_budget == Consult(remote)
