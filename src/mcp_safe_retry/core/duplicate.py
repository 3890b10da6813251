"""What the duplicate guard (``guard``) says of a call, as values a record carries: the
earlier call it repeats (``EarlierCall``, as the call ledger keeps it: ``call_ledger``), where
that call stands (``LedgerState``), what the guard did (``Verdict``), both together
(``Duplicate``). Below ``records``, ``guard`` and ``call_ledger``, which read them.
"""

from __future__ import annotations

import datetime
from enum import StrEnum
from typing import Any

import attrs

from .delivery import Delivery
from .jsonrpc import RequestId

__all__ = ["Duplicate", "EarlierCall", "LedgerState", "Verdict"]


class LedgerState(StrEnum):
    """Where an UNSAFE call the ledger keeps stands: each one holds a repeat back."""

    IN_FLIGHT = "in_flight"  # its request left (or is leaving), no answer yet: still running
    MAY_HAVE_RUN = "may_have_run"  # no answer came, or will: it may have run
    UNSEEN = "ran_unseen"  # it ran: its answer came after its caller had stopped waiting
    RAN = "ran"  # a person said it ran (``CallLedger.resolve(..., ran=True)``)


class Verdict(StrEnum):
    """What the guard did with a call that repeats one that may have run."""

    HELD = "held"  # not sent
    JOINED = "joined"  # not sent: answered with the earlier call's answer, which ran unseen
    LABELLED = "labelled"  # sent: the policy only labels (duplicate_guard="label")
    ALLOWED = "allowed"  # sent: the caller consented (allow_duplicate())


@attrs.frozen
class EarlierCall:
    """What the ledger keeps of an UNSAFE call that is in flight or may have run: when it was
    sent (wall-clock Unix time), under which id and session, where it stands and how it
    ended (``outcome`` empty while it is in flight), the tool, and who sent it (``owner``:
    host, process and call, so that only its sender's answer forgets it)."""

    request_id: RequestId | None
    started_at: float
    delivery: Delivery
    outcome: str  # an Outcome; "" while the call is in flight
    error_kind: str | None = None
    detail: str | None = None
    session_id: str | None = None  # never in to_dict(), like CallRecord.session_id
    state: LedgerState = LedgerState.MAY_HAVE_RUN
    tool: str | None = None
    owner: str = ""
    # A call that ran unseen: its answer (the JSON-RPC response and its classification), kept
    # in the process that received it, for a re-send to join; never in to_dict().
    answer: Any = attrs.field(default=None, eq=False, repr=False)

    def describe(self) -> str:
        """One line for an error message: its time, where it stands, how it ended."""
        when = datetime.datetime.fromtimestamp(self.started_at, datetime.UTC)
        sent = f"was sent at {when.isoformat(timespec='seconds')} (request id {self.request_id!r})"
        if self.state is LedgerState.IN_FLIGHT:
            if self.detail:  # an answer that is no end yet: a task created, still running
                return f"{sent} and was answered {self.outcome}: {self.detail}"
            return f"{sent} and has no answer yet: it is still running"
        ended = self.outcome + (f" ({self.detail})" if self.detail else "")
        if self.state is LedgerState.UNSEEN:
            return f"{sent} and ran: its answer ({ended}) came after its caller stopped waiting"
        if self.state is LedgerState.RAN:
            return f"{sent}, ended {ended}, and was resolved by hand: it ran"
        return f"{sent} and ended {ended}: delivery {self.delivery}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "requestId": self.request_id,
            "startedAt": self.started_at,
            "delivery": str(self.delivery),
            "outcome": self.outcome,
            "errorKind": self.error_kind,
            "detail": self.detail,
            "state": str(self.state),
            "tool": self.tool,
            "owner": self.owner,
        }

    @classmethod
    def from_dict(cls, data: Any) -> EarlierCall | None:
        """An earlier call as ``to_dict`` wrote it (read back from a shared ledger); None
        for anything else (a value another program wrote under the ledger's keys)."""
        try:
            request_id = data["requestId"]
            if request_id is not None and type(request_id) not in (str, int):
                return None
            error_kind, detail, tool = (data.get(k) for k in ("errorKind", "detail", "tool"))
            if any(v is not None and type(v) is not str for v in (error_kind, detail, tool)):
                return None
            return cls(
                request_id,
                float(data["startedAt"]),
                Delivery(data["delivery"]),
                str(data["outcome"]),
                error_kind,
                detail,
                state=LedgerState(data["state"]),
                tool=tool,
                owner=str(data.get("owner") or ""),
            )
        except (KeyError, TypeError, ValueError):
            return None


@attrs.frozen
class Duplicate:
    """A call that repeats an earlier one that is in flight or may have run, what the guard
    did, and which ledger said so (``CallLedger.claim``)."""

    earlier: EarlierCall
    verdict: Verdict
    ledger: str = "process"

    def to_dict(self) -> dict[str, Any]:
        return {**self.earlier.to_dict(), "verdict": str(self.verdict), "ledger": self.ledger}
