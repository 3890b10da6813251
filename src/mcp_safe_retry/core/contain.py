"""Containment: a final transport failure told to the caller as a JSON-RPC error."""

from __future__ import annotations

from typing import Any

from .classify import error_in_body
from .jsonrpc import RequestId, dumps
from .outcomes import Outcome
from .records import CallRecord

__all__ = [
    "CONTAINED_ERROR_CODE",
    "CONTAINED_OUTCOMES",
    "CONTAINED_SOURCE",
    "HANDED_ON_STATUSES",
    "NEVER_CONTAINED_METHODS",
    "contained_error",
    "contains_http_error",
    "server_error",
]

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
        Outcome.DUPLICATE_IN_FLIGHT,
    }
)
"""What is contained outside a stream. An HTTP error is an answer already: it is contained
only where the client above would die of it (``contains_http_error``)."""

HANDED_ON_STATUSES = frozenset({401, 403, 404})
"""Error statuses handed on even where HTTP errors are contained, because a layer above
answers them itself: 401 and 403 go to an httpx ``Auth`` flow (the SDK's OAuth provider
refreshes its token or asks for more scope, and re-sends); 404 is the SDKs' own "session
terminated" (mcp 1.x resolves the request with an error itself; a session the server expired
is renewed below, one the client ended must stay ended)."""


def contains_http_error(status: int | None) -> bool:
    """Whether a final answer with this HTTP status (a classification's: set for an
    HTTP_ERROR only) is contained when HTTP errors are (the httpx flavour: mcp 1.x calls
    ``raise_for_status()`` and ends its session on any non-2xx answer to a POST).

    Not a 1xx/2xx (an answer, a 202 included) nor a 3xx: the SDKs follow redirects within
    the origin themselves, and hand on one they do not follow. Not ``HANDED_ON_STATUSES``.
    """
    return status is not None and status >= 400 and status not in HANDED_ON_STATUSES


def server_error(body: bytes, content_type: str | None, request_id: RequestId) -> bytes | None:
    """The server's own JSON-RPC error in a non-2xx body, as a response to ``request_id``
    (mcp 2.x surfaces such an error the same way, whatever id the server wrote); None when
    the body holds none."""
    error = error_in_body(body, content_type)
    if error is None:
        return None
    return dumps({"jsonrpc": "2.0", "id": request_id, "error": error})


NEVER_CONTAINED_METHODS = frozenset({"server/discover", "initialize"})
"""Methods whose JSON-RPC error an SDK takes as the server's verdict, so a failure of
theirs reaches the SDK as the transport error it is. mcp 2.x's ``Client(mode="auto")``
reads an error answering ``server/discover`` as "this server speaks an older version" and
falls back to ``initialize`` (a contained network error would downgrade the protocol);
an error answering ``initialize`` is the server refusing the handshake."""


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
