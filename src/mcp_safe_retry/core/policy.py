"""The retry policy: one frozen value saying which calls may be re-sent, after which failures,
how often and how far apart, whether reads are hedged, and what the duplicate guard does.

Its rules live beside it, one module each: ``idempotency``, ``backoff``, ``hedge_settings``;
the decision taken with it after each attempt is ``decision.decide``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Any

import attrs

from .backoff import Jitter, backoff
from .hedge_settings import MAX_HEDGES, AdaptiveDelay, check_hedge_after, to_hedge_after
from .idempotency import Idempotency, idempotency_of
from .validators import (
    at_least,
    boolean,
    finite_positive,
    integer,
    member,
    non_negative,
    positive_or_none,
    statuses,
)

__all__ = ["DuplicateGuard", "RetryPolicy"]


class DuplicateGuard(StrEnum):
    """What the duplicate guard does with a re-send of an UNSAFE call that may have run.

    HOLD: not sent (``Outcome.DUPLICATE_HELD``); LABEL: sent, its record names the earlier
    call; OFF: nothing is remembered or looked up.
    """

    HOLD = "hold"
    LABEL = "label"
    OFF = "off"


def _tools(value: Mapping[str, Idempotency | str] | None) -> Mapping[str, Idempotency]:
    """``tools`` held read-only, each tool's Idempotency from the member or its value."""
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, Mapping):
        raise TypeError(
            "tools must be a mapping of tool name (or fnmatch pattern) to Idempotency, such as "
            f'{{"lookup": Idempotency.READ}}, got {type(value).__name__}: {value!r}'
        )
    tools = {}
    for name, idempotency in value.items():
        if not isinstance(name, str):
            raise TypeError(f"tools: a tool name must be a string, got {name!r}")
        try:
            tools[name] = Idempotency(idempotency)
        except ValueError:
            raise ValueError(
                f"tools[{name!r}] must be Idempotency.READ or Idempotency.UNSAFE "
                f"('read' or 'unsafe'), got {idempotency!r}"
            ) from None
    return MappingProxyType(tools)


def _jitter(value: Jitter | str) -> Jitter:
    return member(Jitter, "jitter", value)


def _duplicate_guard(value: DuplicateGuard | str) -> DuplicateGuard:
    return member(DuplicateGuard, "duplicate_guard", value)


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
            ``Idempotency.IDEMPOTENT`` (a write that a repeat adds nothing to: an upsert, a
            ``set_status``) is re-sent after transport failures like READ, never hedged and
            never held by the duplicate guard.
        trust_annotations: count tools whose ``readOnlyHint`` is true as READ, and those
            whose ``idempotentHint`` is true (and not read-only) as IDEMPOTENT.
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
        duplicate_guard: what becomes of a ``tools/call`` of an UNSAFE tool whose earlier
            call (same server, tool and arguments) was sent and got no answer, so it may
            have run (``core/delivery.py``): ``"hold"`` (the default) does not send it,
            ``"label"`` sends it and names the earlier call in its record, ``"off"`` keeps
            no memory of such calls. One call is let through with ``allow_duplicate()``.
        duplicate_window: seconds an earlier call that may have run holds its re-sends.
    """

    max_retries: int = attrs.field(default=2, validator=integer(0))
    initial_backoff: float = attrs.field(default=0.2, validator=non_negative)
    backoff_multiplier: float = attrs.field(default=2.0, validator=at_least(1.0))
    max_backoff: float = attrs.field(default=10.0, validator=non_negative)
    jitter: Jitter = attrs.field(default=Jitter.EQUAL, converter=_jitter)
    retry_statuses: frozenset[int] = attrs.field(
        default=frozenset({408, 429, 500, 502, 503, 504}), converter=statuses
    )
    max_retry_after: float = attrs.field(default=30.0, validator=non_negative)
    deadline: float | None = attrs.field(default=None, validator=positive_or_none)
    tools: Mapping[str, Idempotency] = attrs.field(
        factory=dict, converter=_tools, eq=False, hash=False
    )
    trust_annotations: bool = attrs.field(default=False, validator=boolean)
    retry_unsent: bool = attrs.field(default=True, validator=boolean)
    hedge_after: float | AdaptiveDelay | None = attrs.field(
        default=None, converter=to_hedge_after, validator=check_hedge_after
    )
    max_hedges: int = attrs.field(default=1, validator=integer(1, MAX_HEDGES))
    duplicate_guard: DuplicateGuard = attrs.field(
        default=DuplicateGuard.HOLD, converter=_duplicate_guard
    )
    duplicate_window: float = attrs.field(default=600.0, validator=finite_positive)

    def idempotency(
        self,
        method: str,
        tool: str | None,
        read_only_tools: frozenset[str] = frozenset(),
        idempotent_tools: frozenset[str] = frozenset(),
    ) -> Idempotency:
        """How safe it is to re-send a request under this policy (``idempotency_of``)."""
        return idempotency_of(
            method,
            tool,
            tools=self.tools,
            trust_annotations=self.trust_annotations,
            read_only_tools=read_only_tools,
            idempotent_tools=idempotent_tools,
        )

    def backoff(self, attempt: int, rand: Callable[[], float]) -> float:
        """Seconds to wait after attempt number ``attempt`` (1-based), jitter included, drawn
        from ``rand`` (uniform in [0, 1)): see ``core/backoff.py``."""
        return backoff(
            attempt,
            initial=self.initial_backoff,
            multiplier=self.backoff_multiplier,
            cap=self.max_backoff,
            jitter=self.jitter,
            rand=rand,
        )

    def __reduce__(self) -> tuple[Callable[..., RetryPolicy], tuple[Any, ...]]:
        """Copied and pickled through its constructor: ``tools`` is read-only (a
        ``mappingproxy``, which neither pickles nor deep-copies), so it travels as a dict."""
        fields = attrs.asdict(self, recurse=False)
        fields["tools"] = dict(self.tools)
        return _policy, (type(self), fields)


def _policy(cls: type[RetryPolicy], fields: dict[str, Any]) -> RetryPolicy:
    return cls(**fields)
