"""What the duplicate guard says of a call (core/duplicate.py): the earlier call it repeats
and the guard's verdict, as values a record carries and an error message names."""

from __future__ import annotations

import attrs

from mcp_safe_retry.core.delivery import Delivery
from mcp_safe_retry.core.duplicate import Duplicate, EarlierCall, LedgerState, Verdict

EARLIER = EarlierCall(
    request_id=7,
    started_at=1_790_000_000.0,
    delivery=Delivery.MAY_HAVE_RUN,
    outcome="NETWORK_ERROR",
    error_kind="read",
    detail="reset",
    session_id="s-1",
)


def test_the_earlier_call_is_described_in_one_line_in_utc() -> None:
    assert EARLIER.describe() == (
        "was sent at 2026-09-21T14:13:20+00:00 (request id 7) and ended NETWORK_ERROR "
        "(reset): delivery may_have_run"
    )


def test_its_dict_never_holds_the_session() -> None:
    assert EARLIER.to_dict() == {
        "requestId": 7,
        "startedAt": 1_790_000_000.0,
        "delivery": "may_have_run",
        "outcome": "NETWORK_ERROR",
        "errorKind": "read",
        "detail": "reset",
        "state": "may_have_run",
        "tool": None,
        "owner": "",
    }


def test_it_reads_back_what_it_wrote_and_nothing_else() -> None:
    # A shared ledger reads calls back (RedisCallLedger): the session never went out.
    kept = attrs.evolve(EARLIER, session_id=None, state=LedgerState.IN_FLIGHT, tool="charge")
    assert EarlierCall.from_dict(kept.to_dict()) == kept
    for bad in (None, [], {}, {**kept.to_dict(), "state": "bogus"}, {**kept.to_dict(), "tool": 3}):
        assert EarlierCall.from_dict(bad) is None


def test_a_duplicate_adds_the_verdict() -> None:
    duplicate = Duplicate(EARLIER, Verdict.HELD)
    assert duplicate.to_dict() == {**EARLIER.to_dict(), "verdict": "held", "ledger": "process"}
    assert [str(v) for v in Verdict] == ["held", "joined", "labelled", "allowed"]
