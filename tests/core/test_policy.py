"""The retry policy (core/policy.py): its defaults, validation, keywords only, frozen."""

from __future__ import annotations

import attrs
import pytest

from mcp_safe_retry import RetryPolicy
from mcp_safe_retry.policy import Jitter


def test_defaults() -> None:
    p = RetryPolicy()
    assert (p.max_retries, p.initial_backoff, p.backoff_multiplier) == (2, 0.2, 2.0)
    assert (p.max_backoff, p.jitter, p.max_retry_after, p.deadline) == (
        10.0,
        Jitter.EQUAL,
        30.0,
        None,
    )
    assert p.retry_statuses == frozenset({408, 429, 500, 502, 503, 504})
    assert p.trust_annotations is False


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"max_retries": -1}, id="negative-retries"),
        pytest.param({"max_retries": 1.5}, id="float-retries"),
        pytest.param({"initial_backoff": -0.1}, id="negative-backoff"),
        pytest.param({"initial_backoff": float("nan")}, id="nan-backoff"),
        pytest.param({"backoff_multiplier": 0.5}, id="shrinking"),
        pytest.param({"max_retry_after": float("inf")}, id="inf-cap"),
        pytest.param({"deadline": 0}, id="zero-deadline"),
        pytest.param({"jitter": "sometimes"}, id="bad-jitter"),
        pytest.param({"tools": {"x": "maybe"}}, id="bad-idempotency"),
    ],
)
def test_validation(kwargs: dict[str, object]) -> None:
    with pytest.raises((ValueError, TypeError)):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


def test_positional_arguments_are_refused() -> None:
    with pytest.raises(TypeError):
        RetryPolicy(3)  # type: ignore[misc]


def test_evolve_and_frozen() -> None:
    p = RetryPolicy()
    q = attrs.evolve(p, max_retries=5)
    assert (p.max_retries, q.max_retries) == (2, 5)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        p.max_retries = 3  # type: ignore[misc]
