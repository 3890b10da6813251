"""Header parsing (core/headers.py): Retry-After, as seconds or an HTTP date."""

from __future__ import annotations

import email.utils

import pytest

from mcp_safe_retry.core.headers import parse_retry_after

NOW = 1_800_000_000.0


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
