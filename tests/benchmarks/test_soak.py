"""The soak in miniature: ~200 faulty calls through every client path, same invariants.

The full run is ``python benchmarks/soak.py --calls 10000``; this one takes seconds.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from mcp_safe_retry import Idempotency, classify
from mcp_safe_retry.kitchen import KitchenState, PostRecord
from mcp_safe_retry.records import Attempt, CallRecord, Decision, Reason, RetryOrigin
from tests.soak_support import (
    FAULTS,
    PATHS,
    CallResult,
    PlannedCall,
    SoakConfig,
    SoakReport,
    check,
    plan_calls,
    run_soak,
)

pytestmark = pytest.mark.e2e

SMOKE = SoakConfig(calls=200, concurrency=8, seed=11, call_timeout=20.0, global_timeout=120.0)
REQUIRED = [
    "no_duplicate_side_effects",
    "complete_records",
    "posts_bounded",
    "transient_read_faults_retried",
]
ALSO_HOLDING = [
    "only_transient_read_failures_retried",
    "records_agree_with_server",
    "every_call_finished",
]


@pytest.fixture(scope="module")
def report() -> SoakReport:
    """One small soak run, shared by the checks below."""
    return run_soak(SMOKE)


def invariant(report: SoakReport, name: str) -> Any:
    """The named invariant of a report."""
    [found] = [inv for inv in report.invariants if inv.name == name]
    return found


@pytest.mark.parametrize("name", REQUIRED + ALSO_HOLDING)
def test_invariant_holds(report: SoakReport, name: str) -> None:
    inv = invariant(report, name)
    assert inv.passed, f"{inv.detail}\n" + "\n".join(inv.failures[:10])


def test_records_agree_with_the_client(report: SoakReport) -> None:
    inv = invariant(report, "records_agree_with_client")
    assert inv.passed, "\n".join(inv.failures[:10])


def test_the_run_exercised_every_path_and_the_retry_machinery(report: SoakReport) -> None:
    stats = report.stats
    assert stats["calls"] == SMOKE.calls
    assert set(stats["paths"]) == set(PATHS)
    assert set(stats["tools"]) == {"lookup", "charge"}
    assert stats["posts"]["recorded"] == stats["posts"]["toolsCall"] > SMOKE.calls
    assert stats["posts"]["maxPerCall"] <= SMOKE.max_retries + 1
    assert {"network_error", "retryable_status", "stream_incomplete"} <= set(
        stats["retries"]["byReason"]
    )
    assert stats["read"]["recovered"] > 0
    assert stats["charge"]["maxPerKey"] == 1
    assert "THROTTLED" not in str(stats["decisions"])  # the budget is sized not to interfere
    assert report.render().endswith(("RESULT: PASS", "RESULT: FAIL"))
    assert report.to_json()["stats"] == stats


def test_plan_is_seeded_and_draws_the_whole_mix() -> None:
    config = SoakConfig(calls=10_000, seed=5)
    plan = plan_calls(config)
    assert plan == plan_calls(config)
    assert plan != plan_calls(SoakConfig(calls=10_000, seed=6))
    assert len({call.key for call in plan}) == len(plan)  # one key, one run per call
    drawn = Counter((call.path, call.fault.label) for call in plan)
    for fault in FAULTS:
        for path in fault.paths:
            assert drawn[(path, fault.label)] > 0, (path, fault.label)
    assert {call.tool for call in plan} == {"lookup", "charge"}


# -- the checker itself: a soak that cannot fail proves nothing ---------------------------

_CONFIG = SoakConfig(calls=1)


def _planned(tool: str, scenario_label: str = "baseline") -> PlannedCall:
    [fault] = [f for f in FAULTS if f.label == scenario_label]
    return PlannedCall(0, "raw", tool, fault, f"{tool}-0")


def _post(seq: int, status: int | None, fault: str | None, tool: str) -> PostRecord:
    return PostRecord(
        seq=seq,
        run="soak-0",
        scenario="x",
        method="tools/call",
        request_id=seq,
        tool=tool,
        status=status,
        fault=fault,
        session_id=None,
        protocol_version="2026-07-28",
    )


def _record(tool: str, *attempts: tuple[int, Decision]) -> CallRecord:
    made = tuple(
        Attempt(
            number=n,
            retry_origin=RetryOrigin.NONE if n == 1 else RetryOrigin.SDK,
            wire_id=n,
            classification=classify(status, b""),
            status=status,
            decision=decision,
        )
        for n, (status, decision) in enumerate(attempts, start=1)
    )
    return CallRecord(
        method="tools/call",
        tool=tool,
        request_id="call-0",
        idempotency=Idempotency.READ if tool == "lookup" else Idempotency.UNSAFE,
        attempts=made,
        classification=made[-1].classification,
        complete=True,
    )


def _failed(report: SoakReport) -> set[str]:
    return {inv.name for inv in report.invariants if not inv.passed}


def test_checker_flags_an_unsafe_call_sent_twice() -> None:
    call = _planned("charge", "http.503-once")
    retry = Decision(True, Reason.RETRYABLE_STATUS, 0.001)
    record = _record("charge", (503, retry), (503, Decision.stop(Reason.MAX_RETRIES)))
    state = KitchenState(
        posts=(_post(1, 503, "http_status", "charge"), _post(2, 503, "http_status", "charge")),
        posts_dropped=0,
        execution_counts={("soak-0", "charge", "charge-0"): 0},
    )
    result = CallResult(call, "http:503", [record])
    report = check(_CONFIG, [call], [result], state, duration=1.0, budget_tokens=1.0)
    assert _failed(report) == {"no_duplicate_side_effects", "only_transient_read_failures_retried"}


def test_checker_flags_a_transient_read_failure_left_unretried() -> None:
    call = _planned("lookup", "http.503-once")
    record = _record("lookup", (503, Decision.stop(Reason.NOT_RETRYABLE)))
    state = KitchenState(
        posts=(_post(1, 503, "http_status", "lookup"),),
        posts_dropped=0,
        execution_counts={},
    )
    result = CallResult(call, "http:503", [record])
    report = check(_CONFIG, [call], [result], state, duration=1.0, budget_tokens=1.0)
    assert _failed(report) == {"transient_read_faults_retried"}
    [inv] = [i for i in report.invariants if i.name == "transient_read_faults_retried"]
    assert len(inv.failures) == 2  # seen in the record and in the kitchen's log


def test_checker_flags_a_missing_record_and_a_record_that_disagrees() -> None:
    call = _planned("lookup")
    state = KitchenState(
        posts=(_post(1, 200, None, "lookup"),), posts_dropped=0, execution_counts={}
    )
    report = check(
        _CONFIG, [call], [CallResult(call, "result", [])], state, duration=1.0, budget_tokens=1.0
    )
    assert _failed(report) == {"complete_records"}
    lying = _record("lookup", (400, Decision.stop(Reason.NOT_RETRYABLE)))
    report = check(
        _CONFIG,
        [call],
        [CallResult(call, "result", [lying])],
        state,
        duration=1.0,
        budget_tokens=1.0,
    )
    assert _failed(report) == {"records_agree_with_client"}


def test_soak_stops_by_itself_at_its_global_timeout() -> None:
    """Cut short after 1 s, the run returns and says which calls it did not finish."""
    report = run_soak(SoakConfig(calls=5000, seed=4, global_timeout=1.0))
    assert not report.passed
    assert not invariant(report, "every_call_finished").passed
    assert 0 < report.stats["calls"] < 5000
