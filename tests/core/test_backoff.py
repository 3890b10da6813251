"""The backoff arithmetic (core/backoff.py): each jitter's bounds per attempt."""

from __future__ import annotations

import pytest

from mcp_safe_retry import Idempotency, RetryPolicy
from mcp_safe_retry.core.decision import decide
from mcp_safe_retry.core.outcomes import verdict
from mcp_safe_retry.policy import Jitter
from mcp_safe_retry.records import Outcome


@pytest.mark.parametrize(
    ("jitter", "attempt", "low", "high"),
    [
        pytest.param(Jitter.EQUAL, 1, 0.1, 0.2, id="equal-1"),
        pytest.param(Jitter.EQUAL, 2, 0.2, 0.4, id="equal-2"),
        pytest.param(Jitter.FULL, 2, 0.0, 0.4, id="full-2"),
        pytest.param(Jitter.NONE, 2, 0.4, 0.4, id="none-2"),
    ],
)
def test_backoff_bounds(jitter: Jitter, attempt: int, low: float, high: float) -> None:
    policy = RetryPolicy(jitter=jitter, max_retries=5)
    for r in (0.0, 0.3, 0.999999):
        d = decide(
            policy,
            idempotency=Idempotency.READ,
            classification=verdict(Outcome.NETWORK_ERROR),
            attempt=attempt,
            elapsed=0,
            rand=lambda r=r: r,
        )
        assert low <= d.delay <= high
