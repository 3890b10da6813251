"""What diagnostics may say: short, scrubbed text and a user's last word on every output.

By construction a CallRecord holds no header, no URL and no tool argument (only a digest of
the arguments), and a JSON-RPC error keeps only its code and (500 characters of) its
message, never its ``data``. What still comes from outside is free text: a server's error
message, a tool's error text and a network error's description (scrubbed when recorded).
Before any of it reaches a log line, a JSON line or a span it goes through ``scrub``
(credentials in URLs, auth schemes, cookies and ``key=value`` pairs) and, except in JSON
lines which leave server messages out, is cut to ``MESSAGE_CHARS``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeAlias

from ..core.records import CallRecord

__all__ = ["MESSAGE_CHARS", "REDACTED", "Redactor", "scrub", "short_text"]

MESSAGE_CHARS = 120
"""Characters of a server's error text that logs and spans keep by default."""

REDACTED = "[REDACTED]"

Redactor: TypeAlias = Callable[[dict[str, Any], CallRecord], dict[str, Any] | None]
"""Called with what is about to be written (a JSON dict or span attributes) and the record it
came from; returns what to write instead (drop keys to hide more, read the record to add
more) or None to write nothing. If it raises, nothing is written and the error is logged."""

_CREDENTIAL_KEYS = (
    r"authorization|proxy-authorization|cookie|set-cookie|x-api-key|api[_-]?key|apikey"
    r"|x-auth-token|auth[_-]?token|access[_-]?token|refresh[_-]?token|id[_-]?token|token"
    r"|client[_-]?secret|secret|password|passwd|pwd|credentials?|private[_-]?key|sig"
    r"|signature"
)
_SCRUBBERS: tuple[tuple[re.Pattern[str], str], ...] = (
    # user:password@ in a URL
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]*@"), rf"\1{REDACTED}@"),
    # a URL's query string and fragment
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s?#]*)[?#][^\s\"'<>]*"), rf"\1?{REDACTED}"),
    # a cookie header's whole value
    (re.compile(r"(?i)\b((?:set-)?cookie\s*:\s*)[^\r\n]+"), rf"\1{REDACTED}"),
    # Authorization-style values: "Bearer abc", "Basic abc="
    (
        re.compile(r"(?i)\b(bearer|basic|digest|negotiate)(\s+)[\w.~+/=:-]+"),
        rf"\1\2{REDACTED}",
    ),
    # key=value, key: value, "key": "value" for credential-looking keys
    (
        re.compile(
            rf"(?i)\b({_CREDENTIAL_KEYS})([\"']?\s*[:=]\s*)"
            r"(\"[^\"]*\"|'[^']*'|(?!\[REDACTED\])[^\s,;&\"'}\]]+)"
        ),
        rf"\1\2{REDACTED}",
    ),
)


def scrub(text: str) -> str:
    """Remove what looks like a credential from free text (defence in depth, not a proof)."""
    for pattern, replacement in _SCRUBBERS:
        text = pattern.sub(replacement, text)
    return text


def short_text(text: str | None, limit: int = MESSAGE_CHARS) -> str | None:
    """Scrubbed, then cut to ``limit`` characters (an ellipsis marks the cut); None for
    no text or ``limit`` 0."""
    if not text or limit <= 0:
        return None
    text = scrub(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def record_dict(record: CallRecord) -> dict[str, Any]:
    """``record.to_dict()`` with each attempt's free-text ``detail`` scrubbed."""
    data = record.to_dict()
    for attempt in data["attempts"]:
        if isinstance(attempt.get("detail"), str):
            attempt["detail"] = scrub(attempt["detail"])
    return data
