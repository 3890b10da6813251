"""The closed vocabularies of an attempt (core/attempt_kinds.py): how it was sent, how its network
error is known, and the two sets of error kinds the retry rules read."""

from __future__ import annotations

import pytest

from mcp_safe_retry import Idempotency, RetryPolicy
from mcp_safe_retry.core.attempt_kinds import HEALABLE_NEVER, UNSENT, AttemptKind, ErrorKind
from mcp_safe_retry.core.decision import decide
from mcp_safe_retry.core.outcomes import verdict
from mcp_safe_retry.records import Outcome, Reason


def test_the_vocabularies_are_the_strings_records_carry() -> None:
    assert [str(k) for k in AttemptKind] == ["post", "resume", "hedge", "reinitialise", "held"]
    assert [str(k) for k in ErrorKind] == [
        "connect",
        "pool",
        "timeout",
        "read",
        "write",
        "protocol",
        "network",
        "local",
        "oversized",
        "decoding",
        "internal",
        "cancelled",
    ]


def test_unsent_and_never_healable_kinds_are_apart() -> None:
    assert {ErrorKind.CONNECT, ErrorKind.POOL} == UNSENT
    assert {ErrorKind.LOCAL, ErrorKind.OVERSIZED, ErrorKind.DECODING} == HEALABLE_NEVER
    assert not UNSENT & HEALABLE_NEVER


def _after(kind: ErrorKind, idempotency: Idempotency) -> tuple[str, Reason]:
    decision = decide(
        RetryPolicy(jitter="none"),
        idempotency=idempotency,
        classification=verdict(Outcome.NETWORK_ERROR, error_kind=kind),
        attempt=1,
        elapsed=0.0,
        rand=lambda: 0.5,
    )
    return decision.action, decision.reason


@pytest.mark.parametrize("kind", sorted(UNSENT))
def test_an_unsent_request_is_resent_even_for_an_unsafe_call(kind: ErrorKind) -> None:
    assert _after(kind, Idempotency.UNSAFE) == ("retry", Reason.UNSENT)


@pytest.mark.parametrize("kind", sorted(HEALABLE_NEVER))
def test_a_kind_no_retry_heals_is_never_retried_even_for_a_read(kind: ErrorKind) -> None:
    assert _after(kind, Idempotency.READ) == ("stop", Reason.NOT_RETRYABLE)


def test_any_other_network_error_is_retried_for_a_read_only() -> None:
    assert _after(ErrorKind.READ, Idempotency.READ) == ("retry", Reason.NETWORK_ERROR)
    assert _after(ErrorKind.READ, Idempotency.UNSAFE) == ("stop", Reason.NOT_IDEMPOTENT)
