"""Containment: a final transport failure told to the caller as a JSON-RPC error."""

from __future__ import annotations

from typing import Any

from .classify import Outcome
from .jsonrpc import RequestId, dumps
from .records import CallRecord

__all__ = ["CONTAINED_ERROR_CODE", "CONTAINED_OUTCOMES", "contained_error"]

CONTAINED_ERROR_CODE = -32090
"""The JSON-RPC error code of a failure the transport contained (``contain_failures``)."""

CONTAINED_OUTCOMES = frozenset(
    {Outcome.NETWORK_ERROR, Outcome.STREAM_INCOMPLETE, Outcome.CIRCUIT_OPEN}
)
"""What is contained outside a stream (an HTTP error is an answer already)."""


def contained_error(record: CallRecord, request_id: RequestId) -> bytes:
    """The JSON-RPC error response standing for ``record``'s failure.

    Its ``data`` summarises the attempts (outcome, status, error kind, reason), never a
    body, a header or an argument.
    """
    final = record.classification
    assert final is not None  # only a finished call is contained
    detail = final.detail or (f"HTTP {final.status}" if final.status else "")
    message = f"mcp-safe-retry: {final.outcome} after {record.post_count} attempt(s)"
    attempts: list[dict[str, Any]] = [
        {
            "number": a.number,
            "outcome": str(a.classification.outcome),
            "httpStatus": a.status,
            "errorKind": a.error_kind,
            "reason": str(a.decision.reason) if a.decision else None,
        }
        for a in record.attempts
    ]
    error = {
        "code": CONTAINED_ERROR_CODE,
        "message": f"{message}: {detail}" if detail else message,
        "data": {"outcome": str(final.outcome), "layer": str(final.layer), "attempts": attempts},
    }
    return dumps({"jsonrpc": "2.0", "id": request_id, "error": error})
