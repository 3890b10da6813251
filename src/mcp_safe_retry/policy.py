"""The values ``RetryPolicy``'s settings take, for those who prefer them to strings:
``Jitter`` (``jitter=``), ``AdaptiveDelay`` (``hedge_after=``, or ``"adaptive"``),
``DuplicateGuard`` (``duplicate_guard=``), and the bounds ``MAX_HEDGES`` and
``READ_METHODS`` (the protocol methods that are always READ)."""

from .core.backoff import Jitter
from .core.hedge_settings import MAX_HEDGES, AdaptiveDelay
from .core.idempotency import READ_METHODS
from .core.policy import DuplicateGuard

__all__ = ["MAX_HEDGES", "READ_METHODS", "AdaptiveDelay", "DuplicateGuard", "Jitter"]
