"""The pure decision after an attempt (core/decision.py): what is never retried, what is,
max retries, Retry-After, the deadline, unsent requests."""

from __future__ import annotations

import pytest

from mcp_safe_retry import Idempotency, RetryPolicy
from mcp_safe_retry.core.decision import SETTLED, decide, is_transient
from mcp_safe_retry.core.outcomes import verdict
from mcp_safe_retry.policy import Jitter
from mcp_safe_retry.records import Outcome, Reason


def _decide(
    outcome: Outcome,
    *,
    status: int | None = None,
    idem: Idempotency = Idempotency.READ,
    attempt: int = 1,
    elapsed: float = 0.0,
    retry_after: float | None = None,
    policy: RetryPolicy | None = None,
    kind: str | None = None,
):  # type: ignore[no-untyped-def]
    c = verdict(outcome, status=status, error_kind=kind)
    return decide(
        policy or RetryPolicy(),
        idempotency=idem,
        classification=c,
        attempt=attempt,
        elapsed=elapsed,
        retry_after=retry_after,
        rand=lambda: 0.5,
    )


STOPS = [
    pytest.param(Outcome.TOOL_SUCCESS, None, Reason.SUCCESS, id="tool-success"),
    pytest.param(Outcome.RPC_SUCCESS, None, Reason.SUCCESS, id="rpc-success"),
    pytest.param(Outcome.ACCEPTED, None, Reason.SUCCESS, id="accepted"),
    pytest.param(Outcome.JSONRPC_ERROR, None, Reason.NOT_RETRYABLE, id="jsonrpc-error"),
    pytest.param(Outcome.TOOL_ERROR, None, Reason.NOT_RETRYABLE, id="tool-error"),
    pytest.param(Outcome.INPUT_REQUIRED, None, Reason.NOT_RETRYABLE, id="input-required"),
    pytest.param(Outcome.MALFORMED_JSON, None, Reason.NOT_RETRYABLE, id="malformed"),
    pytest.param(Outcome.INVALID_ENVELOPE, None, Reason.NOT_RETRYABLE, id="envelope"),
    pytest.param(Outcome.INVALID_TOOL_RESULT, None, Reason.NOT_RETRYABLE, id="tool-result"),
    pytest.param(Outcome.HTTP_ERROR, 400, Reason.NOT_RETRYABLE, id="400"),
    pytest.param(Outcome.HTTP_ERROR, 401, Reason.NOT_RETRYABLE, id="401"),
    pytest.param(Outcome.HTTP_ERROR, 404, Reason.NOT_RETRYABLE, id="404"),
    pytest.param(Outcome.HTTP_ERROR, 501, Reason.NOT_RETRYABLE, id="501"),
    pytest.param(Outcome.REDIRECT, 307, Reason.REDIRECT, id="redirect"),
]


@pytest.mark.parametrize(("outcome", "status", "reason"), STOPS)
def test_never_retried(outcome: Outcome, status: int | None, reason: Reason) -> None:
    d = _decide(outcome, status=status)
    assert (d.retry, d.reason) == (False, reason)


RETRIES = [
    pytest.param(Outcome.NETWORK_ERROR, None, Reason.NETWORK_ERROR, id="network"),
    pytest.param(Outcome.STREAM_INCOMPLETE, None, Reason.STREAM_INCOMPLETE, id="stream"),
    *[
        pytest.param(Outcome.HTTP_ERROR, s, Reason.RETRYABLE_STATUS, id=str(s))
        for s in (408, 429, 500, 502, 503, 504)
    ],
]


@pytest.mark.parametrize(("outcome", "status", "reason"), RETRIES)
def test_transient_failures_of_reads_are_retried(
    outcome: Outcome, status: int | None, reason: Reason
) -> None:
    d = _decide(outcome, status=status)
    assert (d.retry, d.reason) == (True, reason)
    unsafe = _decide(outcome, status=status, idem=Idempotency.UNSAFE)
    assert (unsafe.retry, unsafe.reason) == (False, Reason.NOT_IDEMPOTENT)


@pytest.mark.parametrize("kind", ["local", "oversized"])
def test_errors_no_retry_can_heal(kind: str) -> None:
    assert _decide(Outcome.NETWORK_ERROR, kind=kind).reason is Reason.NOT_RETRYABLE


def test_max_retries() -> None:
    assert _decide(Outcome.NETWORK_ERROR, attempt=2).retry
    assert _decide(Outcome.NETWORK_ERROR, attempt=3).reason is Reason.MAX_RETRIES
    assert (
        _decide(Outcome.NETWORK_ERROR, policy=RetryPolicy(max_retries=0)).reason
        is Reason.MAX_RETRIES
    )


def test_backoff_is_capped() -> None:
    policy = RetryPolicy(max_retries=20, jitter=Jitter.NONE, max_backoff=1.5)
    assert _decide(Outcome.NETWORK_ERROR, attempt=10, policy=policy).delay == 1.5


def test_retry_after_raises_the_wait() -> None:
    d = _decide(Outcome.HTTP_ERROR, status=429, retry_after=3.0)
    assert (d.retry, d.delay) == (True, 3.0)
    small = _decide(Outcome.HTTP_ERROR, status=503, retry_after=0.01)
    assert 0.1 <= small.delay <= 0.2  # never shorter than the backoff


def test_retry_after_is_read_only_on_429_and_503() -> None:
    assert _decide(Outcome.HTTP_ERROR, status=502, retry_after=5.0).delay <= 0.2


def test_retry_after_over_the_cap_stops() -> None:
    d = _decide(Outcome.HTTP_ERROR, status=429, retry_after=31.0)
    assert (d.retry, d.reason) == (False, Reason.RETRY_AFTER_OVER_CAP)


def test_deadline() -> None:
    policy = RetryPolicy(deadline=1.0)
    assert _decide(Outcome.NETWORK_ERROR, elapsed=0.5, policy=policy).retry
    d = _decide(Outcome.NETWORK_ERROR, elapsed=0.9, policy=policy)
    assert (d.retry, d.reason) == (False, Reason.DEADLINE)
    late = _decide(Outcome.HTTP_ERROR, status=429, retry_after=2.0, policy=policy)
    assert late.reason is Reason.DEADLINE


@pytest.mark.parametrize(
    ("kind", "retried"),
    [
        pytest.param("connect", True, id="connect"),
        pytest.param("pool", True, id="pool"),
        pytest.param("timeout", False, id="read-timeout"),
        pytest.param("read", False, id="read"),
        pytest.param("protocol", False, id="peer-closed"),
    ],
)
def test_unsent_unsafe_calls_are_retried_by_default(kind: str, retried: bool) -> None:
    d = _decide(Outcome.NETWORK_ERROR, kind=kind, idem=Idempotency.UNSAFE)
    assert (d.retry, d.reason) == (
        (True, Reason.UNSENT) if retried else (False, Reason.NOT_IDEMPOTENT)
    )
    off = RetryPolicy(retry_unsent=False)
    opted_out = _decide(Outcome.NETWORK_ERROR, kind=kind, idem=Idempotency.UNSAFE, policy=off)
    assert (opted_out.retry, opted_out.reason) == (False, Reason.NOT_IDEMPOTENT)
    status = _decide(Outcome.HTTP_ERROR, status=503, idem=Idempotency.UNSAFE)
    assert (status.retry, status.reason) == (False, Reason.NOT_IDEMPOTENT)


@pytest.mark.parametrize("kind", ["connect", "pool"])
def test_unsent_retries_count_against_max_retries(kind: str) -> None:
    last = _decide(Outcome.NETWORK_ERROR, kind=kind, idem=Idempotency.UNSAFE, attempt=3)
    assert (last.retry, last.reason) == (False, Reason.MAX_RETRIES)


def test_a_read_that_never_left_keeps_its_network_error_reason() -> None:
    d = _decide(Outcome.NETWORK_ERROR, kind="connect", idem=Idempotency.READ)
    assert (d.retry, d.reason) == (True, Reason.NETWORK_ERROR)


@pytest.mark.parametrize("outcome", [pytest.param(o, id=str(o)) for o in Outcome])
def test_an_outcome_that_settles_its_attempt_is_no_failure_whatever_the_policy(
    outcome: Outcome,
) -> None:
    """``SETTLED`` is ``decide``'s first step: what it holds stops whatever else is true,
    and is never a transient failure (a caller that finds it there counts none)."""
    classification = verdict(outcome, status=503, error_kind="connect")
    stop = SETTLED.get(outcome)
    for policy in (RetryPolicy(), RetryPolicy(retry_statuses=frozenset(), max_retries=0)):
        for idempotency in Idempotency:
            decision = decide(
                policy,
                idempotency=idempotency,
                classification=classification,
                attempt=1,
                elapsed=0.0,
                rand=lambda: 0.5,
            )
            if stop is not None:
                assert decision is stop
                assert not is_transient(policy, classification)
    assert stop is None or not stop.retry


def test_idempotent_calls_are_retried_like_reads() -> None:
    for outcome, status in ((Outcome.NETWORK_ERROR, None), (Outcome.HTTP_ERROR, 503)):
        d = _decide(outcome, status=status, kind="read", idem=Idempotency.IDEMPOTENT)
        assert d.retry
    spent = _decide(Outcome.NETWORK_ERROR, kind="read", idem=Idempotency.IDEMPOTENT, attempt=3)
    assert (spent.retry, spent.reason) == (False, Reason.MAX_RETRIES)
    late = _decide(
        Outcome.NETWORK_ERROR,
        kind="read",
        idem=Idempotency.IDEMPOTENT,
        elapsed=0.9,
        policy=RetryPolicy(deadline=1.0),
    )
    assert (late.retry, late.reason) == (False, Reason.DEADLINE)
    tool_error = _decide(Outcome.TOOL_ERROR, idem=Idempotency.IDEMPOTENT)
    assert not tool_error.retry


@pytest.mark.parametrize(
    ("status", "retried"),
    [
        pytest.param(503, True, id="503-says-retry"),
        pytest.param(400, False, id="400-does-not"),
        pytest.param(None, False, id="2xx-never"),
    ],
)
def test_a_jsonrpc_error_in_a_non_2xx_answer_is_retried_only_where_the_status_says(
    status: int | None, retried: bool
) -> None:
    d = _decide(Outcome.JSONRPC_ERROR, status=status, idem=Idempotency.READ)
    assert d.retry is retried
