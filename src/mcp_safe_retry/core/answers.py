"""What a call hands on in place of the answer as it came: the answer under the caller's
own id (a re-sent request went out under a fresh one), a re-issued stream's last answer as
one SSE event, and the JSON-RPC error that stands for a contained failure. Pure functions of
the values the call keeps.
"""

from __future__ import annotations

from .contain import (
    CONTAINED_OUTCOMES,
    NEVER_CONTAINED_METHODS,
    contained_error,
    contains_http_error,
)
from .jsonrpc import JSON, RequestFacts, RequestId, answers_under, dumps, is_exact, loads, with_id
from .records import CallRecord
from .sse import encode_event

__all__ = ["contained", "exact", "restored", "spliced", "stale"]


def exact(message: JSON, source: bytes | None) -> JSON:
    """The answer with exact integers, to be re-serialised (``source``: its body, when it
    was read without the huge-integer scan)."""
    if source is None or is_exact(source):
        return message
    return loads(source)


def restored(
    message: JSON, source: bytes | None, wire_id: RequestId | None, caller_id: RequestId | None
) -> bytes | None:
    """The answer to a request re-sent under ``wire_id``, under the caller's own id again;
    None when it needs no change (never re-sent: the common case)."""
    if (
        caller_id is None
        or wire_id is caller_id
        or not isinstance(message, dict)
        or not answers_under(message, wire_id, caller_id)
    ):
        return None
    return with_id(exact(message, source), caller_id)


def spliced(message: JSON, source: bytes | None, caller_id: RequestId | None) -> bytes | None:
    """The last read answer as one SSE event for the caller's id, to end a stream that
    broke and was re-issued; None when that answer holds no JSON-RPC response."""
    if not isinstance(message, dict) or ("result" not in message and "error" not in message):
        return None
    message = exact(message, source)
    if isinstance(message, dict) and message.get("id") is not None and caller_id is not None:
        message = {**message, "id": caller_id}
    return encode_event(dumps(message))


def contained(
    facts: RequestFacts,
    record: CallRecord,
    *,
    failures: bool,
    http_errors: bool,
    in_stream: bool = False,
) -> bytes | None:
    """The JSON-RPC error that stands for a call's failure, when failures are contained.

    Outside a stream NETWORK_ERROR, STREAM_INCOMPLETE, CIRCUIT_OPEN and DUPLICATE_HELD
    are contained; an HTTP error is an answer already, contained only where HTTP errors are
    (``http_errors``: the httpx flavour) and its status is not one a layer above handles
    (``contains_http_error``). Inside an SSE stream that holds no response, whatever ended
    the call is. None when containment is off (``failures``), the call is a notification,
    or its method's error would be read as the server's verdict (``NEVER_CONTAINED_METHODS``).
    """
    if not failures or facts.id is None:
        return None
    if facts.method in NEVER_CONTAINED_METHODS:  # the SDK reads it as a verdict
        return None
    final = record.classification
    if final is None:
        return None
    if (
        not in_stream
        and final.outcome not in CONTAINED_OUTCOMES
        and not (http_errors and contains_http_error(final.status))
    ):
        return None
    body = contained_error(record, facts.id)
    return encode_event(body) if in_stream else body


def stale(result: JSON, caller_id: RequestId | None, *, in_stream: bool = False) -> bytes:
    """A list read's last good answer (``result``) as the response to the caller's id: a
    JSON body, or one SSE event inside a stream already handed on."""
    body = dumps({"jsonrpc": "2.0", "id": caller_id, "result": result})
    return encode_event(body) if in_stream else body
