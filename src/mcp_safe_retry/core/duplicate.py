"""What the duplicate guard (``guard``) says of a call, as values a record carries: the
earlier call it repeats (``EarlierCall``), what the guard did (``Verdict``), both together
(``Duplicate``). Below ``records`` and ``guard``, which both read them.
"""

from __future__ import annotations

import datetime
from enum import StrEnum
from typing import Any

import attrs

from .delivery import Delivery
from .jsonrpc import RequestId

__all__ = ["Duplicate", "EarlierCall", "Verdict"]


class Verdict(StrEnum):
    """What the guard did with a call that repeats one that may have run."""

    HELD = "held"  # not sent
    LABELLED = "labelled"  # sent: the policy only labels (duplicate_guard="label")
    ALLOWED = "allowed"  # sent: the caller consented (allow_duplicate())


@attrs.frozen
class EarlierCall:
    """What the guard remembers of a call that may have run: when it was sent (wall-clock
    Unix time), under which id and session, and how it ended."""

    request_id: RequestId | None
    started_at: float
    delivery: Delivery
    outcome: str  # an Outcome
    error_kind: str | None = None
    detail: str | None = None
    session_id: str | None = None  # never in to_dict(), like CallRecord.session_id

    def describe(self) -> str:
        """One line for an error message: its time, its delivery state, how it ended."""
        when = datetime.datetime.fromtimestamp(self.started_at, datetime.UTC)
        ended = self.outcome + (f" ({self.detail})" if self.detail else "")
        return (
            f"was sent at {when.isoformat(timespec='seconds')} (request id "
            f"{self.request_id!r}) and ended {ended}: delivery {self.delivery}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "requestId": self.request_id,
            "startedAt": self.started_at,
            "delivery": str(self.delivery),
            "outcome": self.outcome,
            "errorKind": self.error_kind,
            "detail": self.detail,
        }


@attrs.frozen
class Duplicate:
    """A call that repeats an earlier one that may have run, and what the guard did."""

    earlier: EarlierCall
    verdict: Verdict

    def to_dict(self) -> dict[str, Any]:
        return {**self.earlier.to_dict(), "verdict": str(self.verdict)}
