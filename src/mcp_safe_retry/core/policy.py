"""The retry policy (a frozen value) and the pure decision taken after each attempt.

Backoff and the deadline are plain arithmetic over the attempt number and the elapsed time
the caller hands in (tenacity's ``wait_exponential`` and ``stop_before_delay`` rules, written
out), so nothing here sleeps or reads the time.
"""

from __future__ import annotations

import email.utils
import fnmatch
import math
import random
from collections.abc import Callable, Mapping
from enum import StrEnum
from types import MappingProxyType

import attrs
import tenacity
from attrs import validators as v

from .classify import SUCCESSES, Classification, Outcome
from .kinds import HEALABLE_NEVER, UNSENT

__all__ = [
    "MAX_HEDGES",
    "READ_METHODS",
    "Action",
    "AdaptiveDelay",
    "Decision",
    "Idempotency",
    "Jitter",
    "Reason",
    "RetryPolicy",
    "decide",
    "is_transient",
    "parse_retry_after",
]

READ_METHODS = frozenset(
    {
        "ping",
        "initialize",
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "server/discover",
    }
)
"""Protocol methods that change nothing on the server, so re-sending them is safe."""

MAX_HEDGES = 3
"""The most hedges one call may send: each one is a whole extra request to the server."""

RETRY_AFTER_STATUSES = frozenset({429, 503})
"""The statuses whose Retry-After header is honoured (RFC 9110: 503; RFC 6585: 429)."""


def retries_after(status: int | None) -> bool:
    """Whether a response with this status carries a Retry-After worth reading."""
    return status in RETRY_AFTER_STATUSES


class Idempotency(StrEnum):
    """Whether a call may be sent again after the server may have seen it."""

    READ = "read"
    UNSAFE = "unsafe"


class Jitter(StrEnum):
    """How a backoff ``b`` is randomised: NONE ``b``, EQUAL ``[b/2, b]``, FULL ``[0, b]``."""

    NONE = "none"
    EQUAL = "equal"
    FULL = "full"


class Action(StrEnum):
    RETRY = "retry"
    STOP = "stop"


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
    REDIRECT = "redirect"  # a 3xx hop: the client sends the request on to its Location


@attrs.frozen
class Decision:
    """What follows an attempt: a retry after ``delay`` seconds, or the end of the call."""

    action: Action
    reason: Reason
    delay: float = 0.0

    @property
    def retry(self) -> bool:
        return self.action is Action.RETRY


def _tools(value: Mapping[str, Idempotency | str] | None) -> Mapping[str, Idempotency]:
    return MappingProxyType({str(k): Idempotency(val) for k, val in (value or {}).items()})


def _non_negative(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
        raise ValueError(f"{attribute.name} must be a finite number >= 0, got {value!r}")


def _positive(_: object, attribute: attrs.Attribute[float | None], value: float | None) -> None:
    finite = isinstance(value, int | float) and math.isfinite(value)
    if value is not None and not (finite and value > 0):
        raise ValueError(f"{attribute.name} must be None or a finite number > 0, not {value!r}")


def _fraction(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (isinstance(value, int | float) and 0 < value < 1):
        raise ValueError(
            f"{attribute.name} must be a number strictly between 0 and 1, got {value!r}"
        )


def _finite_positive(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise ValueError(f"{attribute.name} must be a finite number > 0, got {value!r}")


@attrs.frozen(kw_only=True)
class AdaptiveDelay:
    """Hedge at a running quantile of the server's own recent latencies, within bounds.

    Until ``min_samples`` latencies of a server are known its hedges wait ``initial``.

    Args:
        quantile: the share of answers expected before a hedge goes out (0.95: hedge the
            slowest twentieth).
        floor: the shortest wait, so jitter on a very fast server sends no hedges.
        ceiling: the longest wait, so a slow server is still hedged.
        initial: the wait before enough latencies are known.
        min_samples: latencies needed before the quantile is trusted.
    """

    quantile: float = attrs.field(default=0.95, validator=_fraction)
    floor: float = attrs.field(default=0.02, validator=_finite_positive)
    ceiling: float = attrs.field(default=2.0, validator=_finite_positive)
    initial: float = attrs.field(default=0.25, validator=_finite_positive)
    min_samples: int = attrs.field(default=20, validator=[v.instance_of(int), v.ge(1)])

    def __attrs_post_init__(self) -> None:
        if not self.floor <= self.initial <= self.ceiling:
            raise ValueError(
                f"need floor <= initial <= ceiling, got {self.floor}, {self.initial}, "
                f"{self.ceiling}"
            )

    def clamp(self, seconds: float) -> float:
        """``seconds`` moved into ``[floor, ceiling]``."""
        return min(self.ceiling, max(self.floor, seconds))


def _hedge_after(value: float | AdaptiveDelay | str | None) -> float | AdaptiveDelay | None:
    if isinstance(value, str):
        if value == "adaptive":
            return AdaptiveDelay()
        raise ValueError(f'hedge_after must be seconds, "adaptive" or an AdaptiveDelay: {value!r}')
    return value


def _hedge_delay(
    _: object,
    attribute: attrs.Attribute[float | AdaptiveDelay | None],
    value: float | AdaptiveDelay | None,
) -> None:
    if value is None or isinstance(value, AdaptiveDelay):
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{attribute.name} must be a number of seconds, not {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{attribute.name} must be a finite number of seconds > 0, not {value!r}")


@attrs.frozen(kw_only=True)
class RetryPolicy:
    """Which calls may be re-sent, after which failures, how often and how far apart.

    Args:
        max_retries: re-sends after the first attempt.
        initial_backoff: seconds before the first retry (before jitter).
        backoff_multiplier: growth of the backoff per retry.
        max_backoff: cap on one backoff (before a Retry-After raises it).
        jitter: how the backoff is randomised.
        retry_statuses: HTTP statuses worth another try.
        max_retry_after: a server asking to wait longer than this gets no retry.
        deadline: seconds across all attempts; a retry that would end past it is not made.
        tools: tool name or fnmatch pattern -> Idempotency; unlisted tools are UNSAFE.
        trust_annotations: count tools whose ``readOnlyHint`` is true as READ.
        retry_unsent: also re-send an UNSAFE call whose request never left this machine (no
            connection could be made, or none came free in the pool): the server cannot have
            seen it, so it cannot run twice (gRPC's transparent retry). On by default; such a
            retry counts against ``max_retries``, the deadline and the retry budget like any
            other, and is recorded with reason ``unsent``.
        hedge_after: seconds without an answer before a READ call is sent again alongside
            the first copy (a hedge, with its own JSON-RPC id); ``"adaptive"`` or an
            ``AdaptiveDelay`` waits for a running quantile of the server's own latencies.
            None (the default): no hedging. Async transports only: a sync one refuses a
            hedging policy at construction (``ValueError``).
        max_hedges: hedges one call may send (1 to ``MAX_HEDGES``); with retries a call
            never makes more than ``max_retries + max_hedges + 1`` POSTs.
    """

    max_retries: int = attrs.field(default=2, validator=[v.instance_of(int), v.ge(0)])
    initial_backoff: float = attrs.field(default=0.2, validator=_non_negative)
    backoff_multiplier: float = attrs.field(default=2.0, validator=[_non_negative, v.ge(1.0)])
    max_backoff: float = attrs.field(default=10.0, validator=_non_negative)
    jitter: Jitter = attrs.field(default=Jitter.EQUAL, converter=Jitter)
    retry_statuses: frozenset[int] = attrs.field(
        default=frozenset({408, 429, 500, 502, 503, 504}), converter=frozenset
    )
    max_retry_after: float = attrs.field(default=30.0, validator=_non_negative)
    deadline: float | None = attrs.field(default=None, validator=_positive)
    tools: Mapping[str, Idempotency] = attrs.field(
        factory=dict, converter=_tools, eq=False, hash=False
    )
    trust_annotations: bool = False
    retry_unsent: bool = True
    hedge_after: float | AdaptiveDelay | None = attrs.field(
        default=None, converter=_hedge_after, validator=_hedge_delay
    )
    max_hedges: int = attrs.field(
        default=1, validator=[v.instance_of(int), v.ge(1), v.le(MAX_HEDGES)]
    )

    def idempotency(
        self, method: str, tool: str | None, read_only_tools: frozenset[str] = frozenset()
    ) -> Idempotency:
        """How safe it is to re-send a request (notifications are never re-sent)."""
        if method != "tools/call":
            return Idempotency.READ if method in READ_METHODS else Idempotency.UNSAFE
        if tool is None:
            return Idempotency.UNSAFE
        if tool in self.tools:
            return self.tools[tool]
        for pattern, idempotency in self.tools.items():
            if fnmatch.fnmatchcase(tool, pattern):
                return idempotency
        if self.trust_annotations and tool in read_only_tools:
            return Idempotency.READ
        return Idempotency.UNSAFE

    def backoff(self, attempt: int, rand: Callable[[], float] = random.random) -> float:
        """Seconds to wait after attempt number ``attempt`` (1-based), jitter included.

        The exponential rule of tenacity's ``wait_exponential`` (``initial_backoff *
        backoff_multiplier ** (attempt - 1)``, capped at ``max_backoff``), then jitter.
        """
        exponent = attempt - 1
        start, base, cap = self.initial_backoff, self.backoff_multiplier, self.max_backoff
        if (
            start > 0
            and cap > 0
            and base > 1
            and exponent > math.log(cap, base) - math.log(start, base)
        ):
            delay = max(0, cap)  # past the cap: no power that could overflow
        else:
            try:
                delay = max(0, min(start * base**exponent, cap))
            except OverflowError:
                delay = cap
        if self.jitter is Jitter.NONE:
            return delay
        low = 0.5 if self.jitter is Jitter.EQUAL else 0.0
        return delay * (low + (1.0 - low) * rand())

    def wait_strategy(self, rand: Callable[[], float] = random.random) -> tenacity.wait.wait_base:
        """The backoff as a tenacity wait strategy (attempt n waits before retry n)."""
        return _Backoff(self, rand)


class _Backoff(tenacity.wait.wait_base):
    """``RetryPolicy.backoff`` for tenacity's ``wait=``, read from its public retry state."""

    def __init__(self, policy: RetryPolicy, rand: Callable[[], float]) -> None:
        self._policy, self._rand = policy, rand

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        return self._policy.backoff(retry_state.attempt_number, self._rand)


def decide(
    policy: RetryPolicy,
    *,
    idempotency: Idempotency,
    classification: Classification,
    attempt: int,
    elapsed: float,
    retry_after: float | None = None,
    rand: Callable[[], float] = random.random,
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
    outcome = classification.outcome
    if outcome in SUCCESSES:
        return _STOP_SUCCESS
    if outcome is Outcome.REDIRECT:  # the client sends the request on: not ours to re-send
        return _STOP_REDIRECT
    reason = _transient_reason(policy, classification)
    if reason is None:
        return _STOP_NOT_RETRYABLE
    if idempotency is not Idempotency.READ:
        if not (policy.retry_unsent and classification.error_kind in UNSENT):
            return _STOP_NOT_IDEMPOTENT
        reason = Reason.UNSENT
    if attempt >= policy.max_retries + 1:
        return Decision(Action.STOP, Reason.MAX_RETRIES)
    delay = policy.backoff(attempt, rand)
    if retry_after is not None and retries_after(classification.status):
        if retry_after > policy.max_retry_after:
            return Decision(Action.STOP, Reason.RETRY_AFTER_OVER_CAP)
        delay = max(delay, retry_after)
    if policy.deadline is not None and elapsed + delay >= policy.deadline:
        return Decision(Action.STOP, Reason.DEADLINE)
    return Decision(Action.RETRY, reason, delay)


def is_transient(policy: RetryPolicy, classification: Classification) -> bool:
    """A failure another attempt might not meet (what a retry budget counts as failed)."""
    return _transient_reason(policy, classification) is not None


# Frozen values, so the common stops are shared rather than built per call.
_STOP_SUCCESS = Decision(Action.STOP, Reason.SUCCESS)
_STOP_NOT_RETRYABLE = Decision(Action.STOP, Reason.NOT_RETRYABLE)
_STOP_NOT_IDEMPOTENT = Decision(Action.STOP, Reason.NOT_IDEMPOTENT)
_STOP_REDIRECT = Decision(Action.STOP, Reason.REDIRECT)


def _transient_reason(policy: RetryPolicy, classification: Classification) -> Reason | None:
    outcome = classification.outcome
    if outcome is Outcome.NETWORK_ERROR:
        # A bad URL, a proxy refusal, our own protocol error or a huge body will not heal.
        healable = classification.error_kind not in HEALABLE_NEVER
        return Reason.NETWORK_ERROR if healable else None
    if outcome is Outcome.STREAM_INCOMPLETE:
        return Reason.STREAM_INCOMPLETE
    if outcome is Outcome.HTTP_ERROR and classification.status in policy.retry_statuses:
        return Reason.RETRYABLE_STATUS
    return None


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date).

    Args:
        value: the header value.
        now: the current time as a Unix timestamp, for dates.

    Returns:
        Non-negative seconds, or None for a missing or malformed value.
    """
    if value is None:
        return None
    text = value.strip()
    if text.isascii() and text.replace(".", "", 1).isdigit():
        seconds = float(text)
        return seconds if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        return None  # RFC 9110 dates are always GMT; a zone-less date is not one
    return max(0.0, when.timestamp() - now)
