"""Hedge settings (core/hedge_settings.py): off by default, the adaptive shorthand, and what
the policy and an AdaptiveDelay refuse."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from mcp_safe_retry import Idempotency, RetryPolicy
from mcp_safe_retry.core.hedge_race import may_hedge
from mcp_safe_retry.core.hedge_settings import MAX_HEDGES, AdaptiveDelay

READ = Idempotency.READ


def test_hedging_is_off_by_default() -> None:
    policy = RetryPolicy()
    assert (policy.hedge_after, policy.max_hedges) == (None, 1)
    assert not may_hedge(policy, method="tools/call", request_id=1, idempotency=READ)


def test_adaptive_shorthand() -> None:
    assert RetryPolicy(hedge_after="adaptive").hedge_after == AdaptiveDelay()
    tuned = AdaptiveDelay(quantile=0.9, floor=0.01, ceiling=1.0, initial=0.1, min_samples=5)
    assert RetryPolicy(hedge_after=tuned).hedge_after is tuned
    assert attrs.evolve(RetryPolicy(), hedge_after=0.05).hedge_after == 0.05


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"hedge_after": 0}, id="zero-delay"),
        pytest.param({"hedge_after": -1.0}, id="negative-delay"),
        pytest.param({"hedge_after": float("nan")}, id="nan-delay"),
        pytest.param({"hedge_after": float("inf")}, id="inf-delay"),
        pytest.param({"hedge_after": True}, id="bool-delay"),
        pytest.param({"hedge_after": "soon"}, id="unknown-word"),
        pytest.param({"hedge_after": [0.1]}, id="list-delay"),
        pytest.param({"max_hedges": 0}, id="no-hedges"),
        pytest.param({"max_hedges": MAX_HEDGES + 1}, id="too-many-hedges"),
        pytest.param({"max_hedges": 1.0}, id="float-hedges"),
    ],
)
def test_policy_validation(kwargs: dict[str, Any]) -> None:
    with pytest.raises((ValueError, TypeError)):
        RetryPolicy(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"quantile": 1.0}, id="quantile-one"),
        pytest.param({"quantile": 0}, id="quantile-zero"),
        pytest.param({"floor": 0}, id="zero-floor"),
        pytest.param({"ceiling": float("inf")}, id="inf-ceiling"),
        pytest.param({"floor": 1.0, "ceiling": 0.5, "initial": 0.7}, id="floor-over-ceiling"),
        pytest.param({"initial": 5.0}, id="initial-over-ceiling"),
        pytest.param({"min_samples": 0}, id="no-samples"),
    ],
)
def test_adaptive_validation(kwargs: dict[str, Any]) -> None:
    with pytest.raises((ValueError, TypeError)):
        AdaptiveDelay(**kwargs)
