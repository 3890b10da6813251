"""Backoff arithmetic: the wait before retry number n, jitter included.

Tenacity's ``wait_exponential`` rule written out (``initial * multiplier ** (n - 1)``, capped),
then jitter drawn from the ``rand`` the caller hands in: nothing here sleeps or draws by itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from enum import StrEnum

__all__ = ["Jitter", "backoff"]


class Jitter(StrEnum):
    """How a backoff ``b`` is randomised: NONE ``b``, EQUAL ``[b/2, b]``, FULL ``[0, b]``."""

    NONE = "none"
    EQUAL = "equal"
    FULL = "full"


def backoff(
    attempt: int,
    *,
    initial: float,
    multiplier: float,
    cap: float,
    jitter: Jitter,
    rand: Callable[[], float],
) -> float:
    """Seconds to wait after attempt number ``attempt`` (1-based), jitter included.

    Args:
        attempt: the attempt just made.
        initial: seconds before the first retry (before jitter).
        multiplier: growth per retry.
        cap: the longest wait (before jitter).
        jitter: how the wait is randomised.
        rand: a source of uniform numbers in [0, 1).
    """
    exponent = attempt - 1
    if (
        initial > 0
        and cap > 0
        and multiplier > 1
        and exponent > math.log(cap, multiplier) - math.log(initial, multiplier)
    ):
        delay = max(0, cap)  # past the cap: no power that could overflow
    else:
        try:
            delay = max(0, min(initial * multiplier**exponent, cap))
        except OverflowError:
            delay = cap
    if jitter is Jitter.NONE:
        return delay
    low = 0.5 if jitter is Jitter.EQUAL else 0.0
    return delay * (low + (1.0 - low) * rand())
