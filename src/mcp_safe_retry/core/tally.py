"""What one sent POST tells the retry budget and the circuit breaker, sans I/O.

Every POST that was sent and ended (a plain attempt, a retry, or a copy of a hedged call
that met its own answer or failure) is counted exactly once, here; a copy cancelled by us
(it lost, or its call was abandoned) is counted by neither.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .policy import is_transient, parse_retry_after, retries_after

if TYPE_CHECKING:
    from .call import Head
    from .classify import Classification
    from .commands import Admit
    from .engine import Engine

__all__ = ["asked_wait", "tally"]


def tally(
    engine: Engine, admit: Admit | None, classification: Classification, retry_after: float | None
) -> None:
    """Count one sent POST's ending: with the budget, and with the breaker asked before it
    (``admit``, None without one); ``retry_after`` keeps an opening circuit open longer."""
    failed = is_transient(engine.policy, classification)
    engine.budget.record(failed=failed)
    if admit is not None:
        admit.breaker.record(admit.key, failed=failed, retry_after=retry_after)


def asked_wait(head: Head, wall_clock: Callable[[], float]) -> float | None:
    """The seconds an answer's Retry-After asks for, when its status gives it weight."""
    if head.retry_after is None or not retries_after(head.status):
        return None
    return parse_retry_after(head.retry_after, wall_clock())
