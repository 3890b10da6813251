"""The retry policy's backoff for tenacity: ``wait=wait_strategy(policy)`` in a tenacity loop
waits exactly what ``RetryPolicy.backoff`` says (attempt n waits before retry n).

Kept outside the core, which draws no randomness of its own: this adapter defaults to
``random.random`` for the jitter.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import tenacity

from .core.policy import RetryPolicy

__all__ = ["wait_strategy"]


def wait_strategy(
    policy: RetryPolicy, rand: Callable[[], float] = random.random
) -> tenacity.wait.wait_base:
    """``policy``'s backoff as a tenacity wait strategy, jitter drawn from ``rand``."""
    return _Backoff(policy, rand)


class _Backoff(tenacity.wait.wait_base):
    """``RetryPolicy.backoff`` for tenacity's ``wait=``, read from its public retry state."""

    def __init__(self, policy: RetryPolicy, rand: Callable[[], float]) -> None:
        self._policy, self._rand = policy, rand

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        return self._policy.backoff(retry_state.attempt_number, self._rand)
