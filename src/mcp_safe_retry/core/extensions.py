"""The keys this library reads from and writes to a request's or response's ``extensions``
(and the attribute it sets on the exception that ends a call): every one, in one place."""

from __future__ import annotations

__all__ = [
    "ALLOW_DUPLICATE_EXTENSION",
    "CALLER_EXTENSION",
    "IDEMPOTENCY_EXTENSION",
    "ORIGIN_EXTENSION",
    "RECORD_ATTRIBUTE",
    "RECORD_EXTENSION",
]

IDEMPOTENCY_EXTENSION = "mcp_safe_retry.idempotency"
"""A request extension (``"read"`` or ``"unsafe"``) that overrides the policy for one call."""

ORIGIN_EXTENSION = "mcp_safe_retry.retry_origin"
"""A request extension (a ``RetryOrigin`` or its value) that says who re-sent this call (see
``retry_origin``)."""

ALLOW_DUPLICATE_EXTENSION = "mcp_safe_retry.allow_duplicate"
"""A request extension (``True``) that lets one call through the duplicate guard: it is sent
although the same UNSAFE call may have run already (see ``allow_duplicate``)."""

CALLER_EXTENSION = "mcp_safe_retry.caller"
"""A request extension (a string) naming whom one transport sends this call for, when it
sends for many (the gateway's clients): the duplicate guard keeps each caller's calls apart,
so one caller's re-send is held and another caller's same call is not. Never a credential
itself: the gateway hands a digest of the client's."""

RECORD_EXTENSION = "mcp_safe_retry.record"
"""The response extension that holds the call's record (read it with ``get_record``)."""

RECORD_ATTRIBUTE = "_mcp_safe_retry_record"
"""The attribute of the exception that ends a call holding its record (``get_record``)."""
