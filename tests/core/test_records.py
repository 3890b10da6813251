"""Records are snapshots built when read: the lazy form must build exactly the record."""

from __future__ import annotations

import attrs

from mcp_safe_retry import History, Idempotency
from mcp_safe_retry.core.attempt_kinds import AttemptKind
from mcp_safe_retry.core.decision import Decision, Reason
from mcp_safe_retry.core.events import Head
from mcp_safe_retry.core.outcomes import verdict
from mcp_safe_retry.core.records import AttemptValues, LazyRecord, Seen
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


def test_an_attempt_seen_gives_the_values_it_would_have_been_given_when_it_ended() -> None:
    head = Head(200, "application/json", session_id="s-1")
    seen = Seen(
        number=2,
        retry_origin=RetryOrigin.SDK,
        wire_id="w-2",
        classification=verdict(Outcome.TOOL_SUCCESS),
        head=head,
        error_kind=None,
        delay=0.5,
        retry_after=None,
        decision=None,
        sent_at=10.0,
        ended_at=12.5,
        kind=AttemptKind.POST,
        session_id="s-1",
    )
    values = seen.values(start=4.0)
    assert (values.status, values.content_type) == (200, "application/json")
    assert (values.elapsed, values.duration) == (6.0, 2.5)
    assert values[:4] == seen[:4] and values[6:10] == seen[5:9]
    assert values[12:] == seen[11:]
    # A clock that went back (another thread's reading) never makes a negative duration;
    # no head: no status, no content type.
    early = seen._replace(head=None, ended_at=9.0).values(start=4.0)
    assert (early.status, early.content_type, early.duration) == (None, None, 0.0)
