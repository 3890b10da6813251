"""Containment: a final transport failure told to the caller as a JSON-RPC error."""

from __future__ import annotations

from typing import Any

from .classify import Outcome
from .jsonrpc import RequestId, dumps
from .records import CallRecord

__all__ = ["CONTAINED_ERROR_CODE", "CONTAINED_OUTCOMES", "CONTAINED_SOURCE", "contained_error"]

CONTAINED_ERROR_CODE = -32010
"""The JSON-RPC error code of a failure the transport contained (``contain_failures``).

It lies in -32000..-32019, the range the 2026-07-28 revision leaves to implementations
(-32020..-32099 are the specification's own). It is not -32000: the SDKs raise that one
locally for a closed connection and servers send it for all kinds of errors, so a caller
could not tell a contained failure from either. A server may still use -32010 for a
reason of its own: ``data.source`` and ``data.local`` are what make the error ours.
"""

CONTAINED_SOURCE = "mcp-safe-retry"
"""``data.source`` of a contained error: this client produced it, no server sent it."""

CONTAINED_OUTCOMES = frozenset(
    {
        Outcome.NETWORK_ERROR,
        Outcome.STREAM_INCOMPLETE,
        Outcome.CIRCUIT_OPEN,
        Outcome.DUPLICATE_HELD,
    }
)
"""What is contained outside a stream (an HTTP error is an answer already)."""


def contained_error(record: CallRecord, request_id: RequestId) -> bytes:
    """The JSON-RPC error response standing for ``record``'s failure.

    Its ``data`` says who made it (``source``, ``local: true``), why the call ended
    (``outcome``, ``layer``, and ``reason``: why no further attempt was made) and
    summarises the attempts (outcome, status, error kind, reason, delivery), never a body,
    a header or an argument. A call the duplicate guard held names the earlier call
    (``duplicateOf``: its request id, time, delivery state and how it ended).
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
            "delivery": str(a.delivery),
        }
        for a in record.attempts
    ]
    last = record.attempts[-1] if record.attempts else None
    data = {
        "source": CONTAINED_SOURCE,
        "local": True,
        "outcome": str(final.outcome),
        "layer": str(final.layer),
        "reason": str(last.decision.reason) if last and last.decision else None,
        "attempts": attempts,
    }
    if record.duplicate_of is not None:
        data["duplicateOf"] = record.duplicate_of.to_dict()
    error = {
        "code": CONTAINED_ERROR_CODE,
        "message": f"{message}: {detail}" if detail else message,
        "data": data,
    }
    return dumps({"jsonrpc": "2.0", "id": request_id, "error": error})
