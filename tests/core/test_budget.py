"""Retry budgets (core/budget.py): the burst, refills, refunds, validation, threads."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mcp_safe_retry import RetryBudget


def test_budget_spends_its_burst_then_earns_retries_back() -> None:
    budget = RetryBudget(burst=10, per_success=0.5)
    budget.record(failed=True)  # a failure alone costs nothing
    assert [budget.allow_retry() for _ in range(11)] == [True] * 10 + [False]
    for _ in range(4):
        budget.record(failed=False)
    assert budget.tokens == 2.0
    assert budget.allow_retry() and budget.allow_retry() and not budget.allow_retry()
    for _ in range(100):
        budget.record(failed=False)
    assert budget.tokens == 10.0  # never above the burst


def test_grpc_budget_refills_with_successes() -> None:
    budget = RetryBudget.grpc(max_tokens=10, token_ratio=0.5)
    for _ in range(6):
        budget.record(failed=True)
    assert not budget.allow_retry()
    for _ in range(4):
        budget.record(failed=False)
    assert budget.allow_retry() and budget.tokens == 6.0


def test_a_refund_gives_back_one_retry_and_never_more_than_the_burst() -> None:
    budget = RetryBudget(burst=2)
    assert budget.allow_retry() and budget.allow_retry() and not budget.allow_retry()
    budget.refund()  # a retry allowed, then held back by the breaker
    assert budget.tokens == 1.0 and budget.allow_retry()
    for _ in range(5):
        budget.refund()
    assert budget.tokens == 2.0
    grpc = RetryBudget.grpc(max_tokens=4, token_ratio=1)
    grpc.record(failed=True)
    grpc.refund()  # allowing a retry took nothing here: nothing to give back
    assert grpc.tokens == 3.0


@pytest.mark.anyio
async def test_budgets_answer_async_shells_too() -> None:
    for budget in (RetryBudget(burst=1), RetryBudget.grpc(max_tokens=4, token_ratio=1)):
        budget.record(failed=True)
        assert await budget.allow_retry_async()
        budget.record(failed=True)
        assert not await budget.allow_retry_async()


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: RetryBudget(burst=0), id="no-burst"),
        pytest.param(lambda: RetryBudget(burst=0.5), id="under-one-retry"),
        pytest.param(lambda: RetryBudget(per_success=0), id="no-refill"),
        pytest.param(lambda: RetryBudget(burst=float("inf")), id="infinite"),
        pytest.param(lambda: RetryBudget.grpc(max_tokens=0), id="grpc-empty"),
        pytest.param(lambda: RetryBudget.grpc(token_ratio=0), id="grpc-no-ratio"),
        pytest.param(lambda: RetryBudget.grpc(max_tokens=1, token_ratio=2), id="grpc-ratio"),
    ],
)
def test_budget_validation(make: Any) -> None:
    with pytest.raises(ValueError):
        make()


def test_budget_is_thread_safe() -> None:
    budget = RetryBudget(burst=8000, per_success=1)

    def work() -> None:
        for _ in range(1000):
            assert budget.allow_retry()
            budget.record(failed=False)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert budget.tokens == 8000.0
