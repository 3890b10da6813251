"""Reading the HTTP headers the core decides by: a Content-Type's media type and charset, and
a Retry-After's wait (delta-seconds or an HTTP-date), with the statuses it is honoured for."""

from __future__ import annotations

import email.utils
import functools
import math

__all__ = [
    "RETRY_AFTER_STATUSES",
    "UTF8_CHARSETS",
    "media_type",
    "parse_retry_after",
    "retries_after",
]

UTF8_CHARSETS = (None, "utf-8", "utf8")
"""Charsets (None: none named) whose bytes are read as sent: JSON's own encoding."""

RETRY_AFTER_STATUSES = frozenset({429, 503})
"""The statuses whose Retry-After header is honoured (RFC 9110: 503; RFC 6585: 429)."""


@functools.lru_cache(maxsize=64)
def media_type(content_type: str | None) -> tuple[str, str | None]:
    """``("application/json", "utf-8")`` from ``"Application/JSON; charset=UTF-8"``."""
    if not content_type:
        return "", None
    kind, _, rest = content_type.partition(";")
    charset = None
    for param in rest.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip('"').lower() or None
    return kind.strip().lower(), charset


def retries_after(status: int | None) -> bool:
    """Whether a response with this status carries a Retry-After worth reading."""
    return status in RETRY_AFTER_STATUSES


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date).

    Args:
        value: the header value.
        now: the current time as a Unix timestamp, for dates.

    Returns:
        Non-negative seconds, or None for a missing or malformed value.
    """
    if value is None:
        return None
    text = value.strip()
    if text.isascii() and text.replace(".", "", 1).isdigit():
        seconds = float(text)
        return seconds if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        return None  # RFC 9110 dates are always GMT; a zone-less date is not one
    return max(0.0, when.timestamp() - now)
