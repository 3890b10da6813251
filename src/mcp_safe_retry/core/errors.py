"""The failures this library raises, whatever the HTTP library: one class per failure.

Each flavour's shells raise a subclass that is also that library's own exception
(``httpx.TransportError`` / ``httpx2.TransportError``, ``ReadError`` for an oversized body),
so ``except mcp_safe_retry.CircuitOpenError`` catches the httpx and the httpx2 one alike,
and an SDK that catches its library's transport errors still catches these.
"""

from __future__ import annotations

__all__ = ["BodyTooLarge", "CircuitOpenError", "DuplicateCallError"]


class BodyTooLarge(Exception):
    """A JSON body larger than the transport's ``max_event_bytes``: not read, not retried."""


class CircuitOpenError(Exception):
    """The circuit breaker held the request back: nothing was sent. ``get_record(exc)``
    holds the call's record (its last attempt: ``Outcome.CIRCUIT_OPEN``)."""


class DuplicateCallError(Exception):
    """The duplicate guard held the call back: nothing was sent, because the same UNSAFE
    call (same server, tool and arguments) was sent earlier and got no answer, so it may
    have run. The message names that call (its time, its delivery state, how it ended);
    ``get_record(exc)`` holds this call's record (``Outcome.DUPLICATE_HELD``, and
    ``duplicate_of``). Send it anyway inside ``allow_duplicate()``."""
