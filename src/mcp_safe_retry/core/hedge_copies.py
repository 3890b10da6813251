"""The copies of one hedged call, as values: why each was sent (``CopyKind``), where it stands
(``CopyState``), how its answer bore on the call (``Ending``, sorted by ``ending_of``), and the
latency it tells its server's window (``Sample``). The race between them is
``core/hedge_race.py``."""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

import attrs

from .decision import is_transient
from .jsonrpc import RequestId
from .outcomes import NOT_FAILURES, Classification
from .policy import RetryPolicy

__all__ = ["Copy", "CopyKind", "CopyState", "Ending", "Sample", "ending_of"]


class Ending(StrEnum):
    """How one copy's answer bears on the call."""

    SUCCESS = "success"  # a complete answer that is no failure (INPUT_REQUIRED included)
    FINAL = "final"  # a failure every copy would meet: it is the call's answer
    TRANSIENT = "transient"  # a failure another copy might not meet


def ending_of(policy: RetryPolicy, classification: Classification) -> Ending:
    """Sort a copy's classification into the three endings a race tells apart."""
    if classification.outcome in NOT_FAILURES:
        return Ending.SUCCESS
    return Ending.TRANSIENT if is_transient(policy, classification) else Ending.FINAL


class CopyKind(StrEnum):
    """Why a copy was sent."""

    FIRST = "first"
    HEDGE = "hedge"  # sent while an earlier copy was still unanswered
    RETRY = "retry"  # sent after every earlier copy failed transiently


class CopyState(StrEnum):
    """Where a copy stands."""

    IN_FLIGHT = "in_flight"
    WON = "won"  # its answer is the call's
    FAILED = "failed"  # failed transiently; the call went on without it
    LOST = "lost"  # another copy won first: cancelled in flight, or its late answer dropped
    ABANDONED = "abandoned"  # the caller gave the call up while it was in flight


class Sample(NamedTuple):
    """Copy ``copy``'s latency in seconds; ``censored``: it was cancelled unanswered, so its
    latency is only known to be at least that."""

    copy: int
    seconds: float
    censored: bool


@attrs.frozen
class Copy:
    """One POST of a call.

    Attributes:
        number: 1-based, in the order the copies were sent (the attempt number).
        kind: why it was sent.
        wire_id: the JSON-RPC id it went out under (the caller's for the first copy).
        sent_at: when it was sent (the engine's clock).
        state: where it stands.
        answered_at: when its answer began (a response head) or ended, if it did.
        ending: how its answer bore on the call, if it ended with one.
    """

    number: int
    kind: CopyKind
    wire_id: RequestId | None
    sent_at: float
    state: CopyState = CopyState.IN_FLIGHT
    answered_at: float | None = None
    ending: Ending | None = None

    @property
    def in_flight(self) -> bool:
        return self.state is CopyState.IN_FLIGHT
