"""What one sent POST tells the retry budget and the circuit breaker, sans I/O.

Every POST that was sent and ended (a plain attempt, a retry, or a copy of a hedged call
that met its own answer or failure) is counted exactly once, here; a copy cancelled by us
(it lost, or its call was abandoned) is counted by neither. The breaker also hears whether
the call ends with it (its failure ratio counts calls, not attempts). A redirect (a 3xx
hop) is counted once for the logical request, by the request sent on to its Location: the
hop itself feeds the budget nothing and tells the breaker only that the server answered (its
run of failures ends, a half-open circuit whose probe it was closes), never a call's end.
A token the budget gave for a retry or a hedge that was then not sent goes back to it (``refund``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .decision import is_transient
from .headers import parse_retry_after, retries_after
from .outcomes import Classification, Outcome

if TYPE_CHECKING:
    from .commands import Ask
    from .context import CallContext
    from .events import Head

__all__ = ["asked_wait", "counted", "refund", "tally", "told"]


def counted(context: CallContext, failed: bool) -> None:
    """Count one sent POST's ending with the budget: ``failed`` when it was a transient
    failure (``decision.is_transient``; a caller that decided already knows it)."""
    context.budget.record(failed=failed)


def told(admit: Ask | None, failed: bool, retry_after: float | None, *, ends_call: bool) -> None:
    """Tell the breaker asked before the POST (``admit``, None without one) how it ended;
    ``retry_after`` keeps an opening circuit open longer; ``ends_call`` False when a retry
    or another copy of the call follows it."""
    if admit is not None and admit.breaker is not None:
        admit.breaker.record(admit.key, failed=failed, retry_after=retry_after, ends_call=ends_call)


def tally(
    context: CallContext,
    admit: Ask | None,
    classification: Classification,
    retry_after: float | None,
    *,
    ends_call: bool,
) -> None:
    """Count one sent POST's ending with the budget and the breaker (``counted``, ``told``)."""
    failed = is_transient(context.policy, classification)
    hop = classification.outcome is Outcome.REDIRECT
    if not hop:
        counted(context, failed)
    told(admit, failed, retry_after, ends_call=ends_call and not hop)


def refund(context: CallContext) -> None:
    """Give the budget back a token it granted for a retry or a hedge that was not sent."""
    give_back = context.refund
    if give_back is not None:
        give_back()


def asked_wait(head: Head, wall_clock: Callable[[], float]) -> float | None:
    """The seconds an answer's Retry-After asks for, when its status gives it weight."""
    if head.retry_after is None or not retries_after(head.status):
        return None
    return parse_retry_after(head.retry_after, wall_clock())
