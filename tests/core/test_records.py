"""Records are snapshots built when read: the lazy form must build exactly the record."""

from __future__ import annotations

import attrs

from mcp_safe_retry import History, Idempotency
from mcp_safe_retry.core.decision import Decision, Reason
from mcp_safe_retry.core.outcomes import verdict
from mcp_safe_retry.core.records import AttemptValues, LazyRecord
from mcp_safe_retry.records import Attempt, CallRecord, Outcome, RetryOrigin


def test_attempt_values_follow_the_attempt_fields_in_order() -> None:
    # An Attempt's delivery is worked out from the other fields when it is built.
    assert (*AttemptValues._fields, "delivery") == tuple(f.name for f in attrs.fields(Attempt))


def test_an_attempt_is_built_from_its_values_in_order() -> None:
    ok = verdict(Outcome.TOOL_SUCCESS)
    stop = Decision.stop(Reason.SUCCESS)
    values = AttemptValues(
        number=1,
        retry_origin=RetryOrigin.NONE,
        wire_id=7,
        classification=ok,
        status=200,
        content_type="application/json",
        error_kind=None,
        delay=0.0,
        retry_after=None,
        decision=stop,
        elapsed=0.0,
        duration=0.01,
        kind="post",
    )
    attempt = Attempt(*values)
    assert attempt == Attempt(**values._asdict())
    assert attempt.decision is stop


def test_history_takes_records_and_snapshots_and_replaces_by_identity() -> None:
    history = History(maxlen=3)
    plain = CallRecord(method="ping", tool=None, request_id=1, idempotency=Idempotency.READ)
    history.append(plain)
    first = LazyRecord.of(plain)
    history.append(first)
    history.append(LazyRecord.of(plain), replacing=first)  # equal value, other snapshot
    assert len(history) == 2
    assert history.records() == [plain, plain]
    assert history.last() == plain
