"""How a hedged call's losing copy is cancelled: by closing its response (2026-07-28), or by
closing it and sending ``notifications/cancelled`` for its own wire id on a 2025 session
(``cancel_by``, ``cancellation``)."""

from __future__ import annotations

from enum import StrEnum

from .jsonrpc import RequestId, dumps

__all__ = ["HEDGE_CANCEL_REASON", "SESSION_ERA_VERSIONS", "CancelBy", "cancel_by", "cancellation"]

HEDGE_CANCEL_REASON = "hedged request lost"

SESSION_ERA_VERSIONS = frozenset({"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"})
"""Protocol versions with sessions and client-sent ``notifications/cancelled`` over HTTP."""


class CancelBy(StrEnum):
    """How a copy still in flight is cancelled."""

    CLOSE = "close"  # close its response: on 2026-07-28 that is the cancellation
    NOTIFY = "notify"  # close it and POST notifications/cancelled for its id on the session


def cancel_by(protocol_version: str | None, session_id: str | None) -> CancelBy:
    """How to cancel a losing copy on this connection.

    2026-07-28 defines no client notifications over Streamable HTTP: "closing the SSE
    response stream is itself the cancellation signal" (the same goes for an unread JSON
    body: closing it drops the connection). In 2025-x a disconnect is not a cancellation, so
    a ``notifications/cancelled`` follows, but only inside a session: a server without
    sessions cannot tie it to a request on another POST. A version-less request is 2025-x
    (the header came in 2025-06-18).
    """
    if protocol_version is not None and protocol_version not in SESSION_ERA_VERSIONS:
        return CancelBy.CLOSE
    return CancelBy.CLOSE if session_id is None else CancelBy.NOTIFY


def cancellation(wire_id: RequestId, reason: str = HEDGE_CANCEL_REASON) -> bytes:
    """The ``notifications/cancelled`` body for a request that went out as ``wire_id``."""
    return dumps(
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": wire_id, "reason": reason},
        }
    )
