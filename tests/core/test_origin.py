"""Who re-sent a call (core/origin.py): the explicit marks, the consent to re-send a call
that may have run, and the re-send detector, no transport."""

from __future__ import annotations

import pytest

from mcp_safe_retry import allow_duplicate, retry_origin
from mcp_safe_retry.core.origin import (
    ALLOW_DUPLICATE_EXTENSION,
    ORIGIN_EXTENSION,
    ResendDetector,
    consented,
    marked_origin,
)
from mcp_safe_retry.records import RetryOrigin


def test_retry_origin_refuses_engine_origins() -> None:
    with pytest.raises(ValueError, match="only"), retry_origin("sdk"):
        pass


def test_the_detector_reads_a_digest_only_when_it_holds_a_failure() -> None:
    class Unreadable:
        def __str__(self) -> str:
            raise AssertionError("the digest was worked out")

    detector = ResendDetector()
    assert not detector.is_resend(Unreadable(), 0.0)  # type: ignore[arg-type]
    detector.finished(Unreadable(), False, 0.0)  # type: ignore[arg-type]
    detector.finished("d", True, 0.0)
    assert detector.is_resend("d", 1.0) and len(detector) == 1


def test_a_mark_holds_inside_its_block_only() -> None:
    assert marked_origin({}) is None
    with retry_origin("manual"):
        with retry_origin(RetryOrigin.APPLICATION):
            assert marked_origin({}) is RetryOrigin.APPLICATION  # the innermost mark
        assert marked_origin({}) is RetryOrigin.MANUAL
    assert marked_origin({}) is None
    assert marked_origin({ORIGIN_EXTENSION: "manual"}) is RetryOrigin.MANUAL


def test_consent_to_a_duplicate_is_given_by_the_block_or_the_extension() -> None:
    assert not consented({})
    with allow_duplicate():
        assert consented({})
    assert not consented({})
    assert consented({ALLOW_DUPLICATE_EXTENSION: True})


def test_a_failed_call_repeated_within_the_window_is_a_resend_and_a_success_forgets_it() -> None:
    detector = ResendDetector(window=10.0, capacity=2)
    assert not detector.is_resend("a", 0.0)
    detector.finished("a", True, 0.0)
    assert detector.is_resend("a", 10.0)
    assert not detector.is_resend("a", 10.5)  # outside the window
    detector.finished("a", False, 11.0)  # it succeeded: forgotten
    assert not detector.is_resend("a", 11.0) and len(detector) == 0
    for name in ("x", "y", "z"):
        detector.finished(name, True, 0.0)
    assert len(detector) == 2 and not detector.is_resend("x", 1.0)  # the oldest forgotten
