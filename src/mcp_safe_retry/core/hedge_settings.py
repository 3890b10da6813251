"""The settings of hedged reads: how many hedges a call may send (``MAX_HEDGES``), and how long
to wait before one: fixed seconds, or ``AdaptiveDelay``, a running quantile of the server's
own latencies (read from ``core/latency.py``)."""

from __future__ import annotations

import math

import attrs

from .validators import finite_positive, fraction, integer

__all__ = ["MAX_HEDGES", "AdaptiveDelay", "check_hedge_after", "to_hedge_after"]

MAX_HEDGES = 3
"""The most hedges one call may send: each one is a whole extra request to the server."""


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

    quantile: float = attrs.field(default=0.95, validator=fraction)
    floor: float = attrs.field(default=0.02, validator=finite_positive)
    ceiling: float = attrs.field(default=2.0, validator=finite_positive)
    initial: float = attrs.field(default=0.25, validator=finite_positive)
    min_samples: int = attrs.field(default=20, validator=integer(1))

    def __attrs_post_init__(self) -> None:
        if not self.floor <= self.initial <= self.ceiling:
            raise ValueError(
                f"need floor <= initial <= ceiling, got {self.floor}, {self.initial}, "
                f"{self.ceiling}"
            )

    def clamp(self, seconds: float) -> float:
        """``seconds`` moved into ``[floor, ceiling]``."""
        return min(self.ceiling, max(self.floor, seconds))


def to_hedge_after(value: float | AdaptiveDelay | str | None) -> float | AdaptiveDelay | None:
    """``hedge_after`` as given (seconds, ``"adaptive"``, an AdaptiveDelay or None) as held."""
    if isinstance(value, str):
        if value == "adaptive":
            return AdaptiveDelay()
        raise ValueError(f'hedge_after must be seconds, "adaptive" or an AdaptiveDelay: {value!r}')
    return value


def check_hedge_after(
    _: object,
    attribute: attrs.Attribute[float | AdaptiveDelay | None],
    value: float | AdaptiveDelay | None,
) -> None:
    """Refuse a hedge delay that is neither None, an AdaptiveDelay nor seconds > 0."""
    if value is None or isinstance(value, AdaptiveDelay):
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{attribute.name} must be a number of seconds, not {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{attribute.name} must be a finite number of seconds > 0, not {value!r}")
