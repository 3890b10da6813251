"""The retry policy: idempotency, the pure decision, backoff and Retry-After."""

from __future__ import annotations

import email.utils

import attrs
import pytest

from mcp_safe_retry import Idempotency, RetryPolicy
from mcp_safe_retry.core.decision import decide
from mcp_safe_retry.core.headers import parse_retry_after
from mcp_safe_retry.core.idempotency import READ_METHODS
from mcp_safe_retry.core.outcomes import verdict
from mcp_safe_retry.policy import Jitter
from mcp_safe_retry.records import Outcome, Reason

NOW = 1_800_000_000.0


def test_defaults() -> None:
    p = RetryPolicy()
    assert (p.max_retries, p.initial_backoff, p.backoff_multiplier) == (2, 0.2, 2.0)
    assert (p.max_backoff, p.jitter, p.max_retry_after, p.deadline) == (
        10.0,
        Jitter.EQUAL,
        30.0,
        None,
    )
    assert p.retry_statuses == frozenset({408, 429, 500, 502, 503, 504})
    assert p.trust_annotations is False


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"max_retries": -1}, id="negative-retries"),
        pytest.param({"max_retries": 1.5}, id="float-retries"),
        pytest.param({"initial_backoff": -0.1}, id="negative-backoff"),
        pytest.param({"initial_backoff": float("nan")}, id="nan-backoff"),
        pytest.param({"backoff_multiplier": 0.5}, id="shrinking"),
        pytest.param({"max_retry_after": float("inf")}, id="inf-cap"),
        pytest.param({"deadline": 0}, id="zero-deadline"),
        pytest.param({"jitter": "sometimes"}, id="bad-jitter"),
        pytest.param({"tools": {"x": "maybe"}}, id="bad-idempotency"),
    ],
)
def test_validation(kwargs: dict[str, object]) -> None:
    with pytest.raises((ValueError, TypeError)):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


def test_positional_arguments_are_refused() -> None:
    with pytest.raises(TypeError):
        RetryPolicy(3)  # type: ignore[misc]


def test_evolve_and_frozen() -> None:
    p = RetryPolicy()
    q = attrs.evolve(p, max_retries=5)
    assert (p.max_retries, q.max_retries) == (2, 5)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        p.max_retries = 3  # type: ignore[misc]


IDEMPOTENCY = [
    pytest.param("tools/call", "lookup", {}, Idempotency.UNSAFE, id="unconfigured-tool"),
    pytest.param("tools/call", "lookup", {"lookup": "read"}, Idempotency.READ, id="configured"),
    pytest.param("tools/call", "get_user", {"get_*": "read"}, Idempotency.READ, id="pattern"),
    pytest.param(
        "tools/call",
        "get_user",
        {"get_*": "read", "get_user": "unsafe"},
        Idempotency.UNSAFE,
        id="exact-wins",
    ),
    pytest.param("tools/call", None, {"*": "read"}, Idempotency.UNSAFE, id="no-tool-name"),
    pytest.param("tools/call", "x", {"*": "read"}, Idempotency.READ, id="star"),
    pytest.param("sampling/createMessage", None, {}, Idempotency.UNSAFE, id="unknown-method"),
    pytest.param("resources/subscribe", None, {}, Idempotency.UNSAFE, id="subscribe"),
    pytest.param("logging/setLevel", None, {}, Idempotency.UNSAFE, id="set-level"),
]


@pytest.mark.parametrize(("method", "tool", "tools", "expected"), IDEMPOTENCY)
def test_idempotency(
    method: str, tool: str | None, tools: dict[str, str], expected: Idempotency
) -> None:
    assert RetryPolicy(tools=tools).idempotency(method, tool) is expected  # type: ignore[arg-type]


@pytest.mark.parametrize("method", sorted(READ_METHODS))
def test_protocol_reads_are_read(method: str) -> None:
    assert RetryPolicy().idempotency(method, None) is Idempotency.READ


def test_annotations_are_trusted_only_when_asked() -> None:
    ro = frozenset({"lookup"})
    assert RetryPolicy().idempotency("tools/call", "lookup", ro) is Idempotency.UNSAFE
    trusting = RetryPolicy(trust_annotations=True)
    assert trusting.idempotency("tools/call", "lookup", ro) is Idempotency.READ
    assert trusting.idempotency("tools/call", "charge", ro) is Idempotency.UNSAFE
    configured = RetryPolicy(trust_annotations=True, tools={"lookup": Idempotency.UNSAFE})
    assert configured.idempotency("tools/call", "lookup", ro) is Idempotency.UNSAFE


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


@pytest.mark.parametrize(
    ("jitter", "attempt", "low", "high"),
    [
        pytest.param(Jitter.EQUAL, 1, 0.1, 0.2, id="equal-1"),
        pytest.param(Jitter.EQUAL, 2, 0.2, 0.4, id="equal-2"),
        pytest.param(Jitter.FULL, 2, 0.0, 0.4, id="full-2"),
        pytest.param(Jitter.NONE, 2, 0.4, 0.4, id="none-2"),
    ],
)
def test_backoff_bounds(jitter: Jitter, attempt: int, low: float, high: float) -> None:
    policy = RetryPolicy(jitter=jitter, max_retries=5)
    for r in (0.0, 0.3, 0.999999):
        d = decide(
            policy,
            idempotency=Idempotency.READ,
            classification=verdict(Outcome.NETWORK_ERROR),
            attempt=attempt,
            elapsed=0,
            rand=lambda r=r: r,
        )
        assert low <= d.delay <= high


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


RETRY_AFTER = [
    pytest.param("5", 5.0, id="seconds"),
    pytest.param(" 0 ", 0.0, id="zero"),
    pytest.param("1.5", 1.5, id="fraction"),
    pytest.param(email.utils.formatdate(NOW + 10, usegmt=True), 10.0, id="date"),
    pytest.param(email.utils.formatdate(NOW - 10, usegmt=True), 0.0, id="past-date"),
    pytest.param("-1", None, id="negative"),
    pytest.param("soon", None, id="garbage"),
    pytest.param("", None, id="empty"),
    pytest.param("1e3", None, id="exponent"),
    pytest.param("٣", None, id="non-ascii-digit"),
    pytest.param("Wed, 21 Oct 2015 07:28:00", None, id="zone-less-date"),
    pytest.param(None, None, id="absent"),
    pytest.param("9" * 400, None, id="overflow"),
]


@pytest.mark.parametrize(("value", "expected"), RETRY_AFTER)
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    got = parse_retry_after(value, NOW)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected, abs=1.0)


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


def test_wait_strategy_waits_what_backoff_says_under_tenacity() -> None:
    # The public tenacity adapter: a real Retrying loop sleeps exactly RetryPolicy.backoff.
    import tenacity

    from mcp_safe_retry.tenacity import wait_strategy

    policy = RetryPolicy(initial_backoff=0.2, backoff_multiplier=2.0, max_backoff=0.5)
    slept: list[float] = []
    retrying = tenacity.Retrying(
        wait=wait_strategy(policy, lambda: 0.5),
        stop=tenacity.stop_after_attempt(4),
        sleep=slept.append,
        retry=tenacity.retry_if_exception_type(ValueError),
        reraise=True,
    )

    def down() -> None:
        raise ValueError("down")

    with pytest.raises(ValueError, match="down"):
        retrying(down)
    assert slept == [policy.backoff(n, lambda: 0.5) for n in (1, 2, 3)]
    assert slept == pytest.approx([0.15, 0.3, 0.375])  # 0.2, 0.4, 0.5 (capped), equal jitter
