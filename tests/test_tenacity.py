"""The tenacity adapter (mcp_safe_retry/tenacity.py): a real Retrying loop waits what the
policy's backoff says."""

from __future__ import annotations

import pytest

from mcp_safe_retry import RetryPolicy


def test_wait_strategy_waits_what_backoff_says_under_tenacity() -> None:
    # The public tenacity adapter: a real Retrying loop sleeps exactly RetryPolicy.backoff.
    import tenacity

    from mcp_safe_retry.tenacity import wait_strategy

    policy = RetryPolicy(initial_backoff=0.2, backoff_multiplier=2.0, max_backoff=0.5)
    slept: list[float] = []
    retrying = tenacity.Retrying(
        wait=wait_strategy(policy, lambda: 0.5),
        stop=tenacity.stop_after_attempt(4),
        sleep=slept.append,
        retry=tenacity.retry_if_exception_type(ValueError),
        reraise=True,
    )

    def down() -> None:
        raise ValueError("down")

    with pytest.raises(ValueError, match="down"):
        retrying(down)
    assert slept == [policy.backoff(n, lambda: 0.5) for n in (1, 2, 3)]
    assert slept == pytest.approx([0.15, 0.3, 0.375])  # 0.2, 0.4, 0.5 (capped), equal jitter
