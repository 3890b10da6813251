"""The decision taken after each attempt: another try after a delay, or the end of the call,
and the reason either way (``Reason``). Pure: the caller hands in the elapsed time, the wait a
server asked for and a source of randomness for the jitter."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Literal

import attrs

from .attempt_kinds import HEALABLE_NEVER, UNSENT
from .headers import retries_after
from .idempotency import RETRIED, Idempotency
from .outcomes import SUCCESSES, Classification, Outcome
from .policy import RetryPolicy

__all__ = ["RESUMABLE", "SETTLED", "Decision", "Reason", "decide", "is_transient"]


class Reason(StrEnum):
    """Why an attempt was followed by a retry, or why the call stopped there."""

    # retries
    NETWORK_ERROR = "network_error"
    RETRYABLE_STATUS = "retryable_status"
    STREAM_INCOMPLETE = "stream_incomplete"
    UNSENT = "unsent"  # an UNSAFE call re-sent because its request never left (retry_unsent)
    # A 404 for the session the request carried: the server did not process it. The
    # session is re-initialised (SESSION_LOST), then the request re-sent in the new one
    # (SESSION_REINITIALISED), whatever its idempotency.
    SESSION_LOST = "session_lost"
    SESSION_REINITIALISED = "session_reinitialised"
    # stops
    SUCCESS = "success"
    NOT_IDEMPOTENT = "not_idempotent"
    NOT_RETRYABLE = "not_retryable"
    MAX_RETRIES = "max_retries"
    RETRY_AFTER_OVER_CAP = "retry_after_over_cap"
    DEADLINE = "deadline"
    THROTTLED = "throttled"
    ABANDONED = "abandoned"  # the caller closed the stream or cancelled the call
    RESUMABLE = "resumable"  # the stream had event ids: resuming is the client's (Last-Event-ID)
    CIRCUIT_OPEN = "circuit_open"  # the circuit breaker held the request back: nothing sent
    REINITIALISE_FAILED = "reinitialise_failed"  # no new session: the 404 is handed on
    DUPLICATE_HELD = "duplicate_held"  # the same UNSAFE call may have run: nothing sent
    DUPLICATE_IN_FLIGHT = "duplicate_in_flight"  # the same UNSAFE call is running: not sent
    DUPLICATE_JOINED = "duplicate_joined"  # not sent: the same call's unseen answer handed on
    REDIRECT = "redirect"  # a 3xx hop: the client sends the request on to its Location
    TASK_CREATED = "task_created"  # answered with a task (Tasks extension): the server runs it
    TASK_WORKING = "task_working"  # a poll of a task not finished: neither success nor failure


@attrs.frozen
class Decision:
    """What follows an attempt: a retry after ``delay`` seconds, or the end of the call."""

    retry: bool
    reason: Reason
    delay: float = 0.0

    @classmethod
    def stop(cls, reason: Reason) -> Decision:
        """The end of the call, for ``reason``."""
        return cls(retry=False, reason=reason)

    @property
    def action(self) -> Literal["retry", "stop"]:
        """``"retry"`` or ``"stop"``, as records and logs name a decision."""
        return "retry" if self.retry else "stop"


def decide(
    policy: RetryPolicy,
    *,
    idempotency: Idempotency,
    classification: Classification,
    attempt: int,
    elapsed: float,
    retry_after: float | None = None,
    rand: Callable[[], float],
) -> Decision:
    """Decide what follows attempt number ``attempt`` (1-based) of one call.

    Args:
        policy: the policy in force.
        idempotency: whether the call may be re-sent.
        classification: how the attempt ended.
        attempt: its number.
        elapsed: seconds from the first attempt's start to now.
        retry_after: seconds the server asked to wait, if it did (429 and 503 only).
        rand: a source of uniform numbers in [0, 1), for jitter.
    """
    stop = SETTLED.get(classification.outcome)
    if stop is not None:
        return stop
    reason = _transient_reason(policy, classification)
    if reason is None:
        return _STOP_NOT_RETRYABLE
    if idempotency not in RETRIED:
        if not (policy.retry_unsent and classification.error_kind in UNSENT):
            return _STOP_NOT_IDEMPOTENT
        reason = Reason.UNSENT
    if attempt >= policy.max_retries + 1:
        return Decision.stop(Reason.MAX_RETRIES)
    delay = policy.backoff(attempt, rand)
    if retry_after is not None and retries_after(classification.status):
        if retry_after > policy.max_retry_after:
            return Decision.stop(Reason.RETRY_AFTER_OVER_CAP)
        delay = max(delay, retry_after)
    if policy.deadline is not None and elapsed + delay >= policy.deadline:
        return Decision.stop(Reason.DEADLINE)
    return Decision(retry=True, reason=reason, delay=delay)


def is_transient(policy: RetryPolicy, classification: Classification) -> bool:
    """A failure another attempt might not meet (what a retry budget counts as failed)."""
    return _transient_reason(policy, classification) is not None


# Frozen values, so the common stops are shared rather than built per call.
_STOP_SUCCESS = Decision.stop(Reason.SUCCESS)
_STOP_NOT_RETRYABLE = Decision.stop(Reason.NOT_RETRYABLE)
_STOP_NOT_IDEMPOTENT = Decision.stop(Reason.NOT_IDEMPOTENT)
_STOP_REDIRECT = Decision.stop(Reason.REDIRECT)
RESUMABLE = Decision.stop(Reason.RESUMABLE)

SETTLED: Mapping[Outcome, Decision] = MappingProxyType(
    {
        **dict.fromkeys(SUCCESSES, _STOP_SUCCESS),
        # A redirect: the client sends the request on to its Location, not ours to re-send.
        Outcome.REDIRECT: _STOP_REDIRECT,
        # A task created, or still running: the server has the call; the client polls.
        Outcome.TASK_CREATED: Decision.stop(Reason.TASK_CREATED),
        Outcome.TASK_WORKING: Decision.stop(Reason.TASK_WORKING),
    }
)
"""The outcomes whose attempt the outcome alone settles, whatever the policy, the attempt
number or the time (``decide``'s first step), and the stop for each: none is a transient
failure (``is_transient`` is False), so a caller that finds its outcome here weighs
nothing and counts no failure."""


def _transient_reason(policy: RetryPolicy, classification: Classification) -> Reason | None:
    outcome = classification.outcome
    if outcome is Outcome.NETWORK_ERROR:
        # A bad URL, a proxy refusal, our own protocol error or a huge body will not heal.
        healable = classification.error_kind not in HEALABLE_NEVER
        return Reason.NETWORK_ERROR if healable else None
    if outcome is Outcome.STREAM_INCOMPLETE:
        return Reason.STREAM_INCOMPLETE
    # A JSON-RPC error that came with a non-2xx status is retried only where the status
    # itself says so (a 503 whose body holds an error); a 2xx one has no status here.
    if (
        outcome is Outcome.HTTP_ERROR or outcome is Outcome.JSONRPC_ERROR
    ) and classification.status in policy.retry_statuses:
        return Reason.RETRYABLE_STATUS
    return None
