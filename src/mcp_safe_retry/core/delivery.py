"""Whether the server can have run a request, from how its attempt ended: the one table.

Every attempt is one of three:

- ``NOT_SENT``: the request never reached the server, so it cannot have run: no connection
  could be made or none came free (connect error, connect or pool timeout), the request was
  refused here before a byte left (a bad URL, a proxy's refusal, our own protocol error), or
  it was held back (by the circuit breaker, or by the duplicate guard).
- ``ANSWERED``: the server answered, and the answer says what became of the request: any
  JSON-RPC response (a result, a tool error, a JSON-RPC error, ``input_required``, a result
  that is not a valid tool result), anywhere (a JSON-RPC error inside a 4xx or 5xx body
  too); any 4xx (the request was refused: 400, 401, 403, 404 for an expired session, 408,
  409, 413, 415, 429, ...); the 5xx statuses that say the request was not processed (501 Not
  Implemented, 503 Service Unavailable, 505); 1xx and 3xx (nothing was processed); a
  ``202 Accepted`` to a request (``ACCEPTED_REQUEST``): the server took it, and its answer
  travels elsewhere. That is how the HTTP+SSE transport (2024-11-05) answers every POST: the
  response comes on the event stream the client reads, which this transport does not tie to
  the call; the client has its answer there (over Streamable HTTP a 202 to a request is a
  server's error, which the SDK answers itself). A call that has its answer is not one the
  duplicate guard may hold: were it remembered, the next identical call would be held with
  an error in the body of a POST the HTTP+SSE client never reads, and its caller would wait
  forever.
- ``MAY_HAVE_RUN``: the request was sent (perhaps in part) and no answer tells what became
  of it: a read or write timeout, a reset or a connection closed after sending, a cut SSE
  stream, a cancellation while in flight, an exception of the inner transport's own, an
  answer that could not be read (too large, a Content-Encoding that would not decode, a 2xx
  body that holds no JSON-RPC response), and the 5xx statuses that say processing failed
  or that a gateway got no answer: 500 and 502/504 among them.

500 is ``MAY_HAVE_RUN`` on purpose: a bare 500 says the server failed while handling the
request, not that it did not start; a tool that charged a card and then crashed writing its
answer gives one. A 500 whose body holds a JSON-RPC error is ``ANSWERED``: the server's MCP
layer handled the failure and reported it. 502 and 504 come from a gateway that forwarded
the request and got no (valid) answer back: the server behind it may well have run it.
"""

from __future__ import annotations

from enum import StrEnum

from .attempt_kinds import AttemptKind, ErrorKind
from .outcomes import ACCEPTED_REQUEST, Classification, Outcome

__all__ = ["NOT_PROCESSED_5XX", "Delivery", "delivery_of"]


class Delivery(StrEnum):
    """Whether the server can have run an attempt's request."""

    NOT_SENT = "not_sent"
    ANSWERED = "answered"
    MAY_HAVE_RUN = "may_have_run"


NOT_PROCESSED_5XX = frozenset({501, 503, 505})
"""5xx statuses that say the request was not processed (RFC 9110): every other 5xx may have
followed some processing."""

_ANSWERS = frozenset(
    {
        Outcome.TOOL_SUCCESS,
        Outcome.TOOL_ERROR,
        Outcome.JSONRPC_ERROR,
        Outcome.INPUT_REQUIRED,
        Outcome.INVALID_TOOL_RESULT,  # a JSON-RPC result: the server says the call completed
        Outcome.RPC_SUCCESS,
        Outcome.ACCEPTED,  # a notification's 202
        Outcome.REDIRECT,  # a 3xx: the request is to be sent elsewhere, nothing was processed
        # The Tasks extension's answers: a task created (the server holds the call), a poll.
        Outcome.TASK_CREATED,
        Outcome.TASK_WORKING,
        Outcome.TASK_CANCELLED,
    }
)
_NOT_SENT_KINDS = frozenset({ErrorKind.CONNECT, ErrorKind.POOL, ErrorKind.LOCAL})
_HELD = frozenset({Outcome.CIRCUIT_OPEN, Outcome.DUPLICATE_HELD, Outcome.DUPLICATE_IN_FLIGHT})


def delivery_of(
    classification: Classification, error_kind: str | None = None, kind: str | None = None
) -> Delivery:
    """The delivery of one attempt: ``classification`` is how it ended, ``error_kind`` the
    kind of its network error (else the classification's), ``kind`` its ``AttemptKind``.

    Pure and total: every outcome has its row (see the module's table).
    """
    outcome = classification.outcome
    if kind == AttemptKind.HELD or outcome in _HELD:
        return Delivery.NOT_SENT
    if outcome in _ANSWERS or classification == ACCEPTED_REQUEST:
        return Delivery.ANSWERED
    if outcome is Outcome.HTTP_ERROR:
        status = classification.status or 0
        if classification.code is not None or status < 500 or status in NOT_PROCESSED_5XX:
            return Delivery.ANSWERED
        return Delivery.MAY_HAVE_RUN
    if outcome is Outcome.NETWORK_ERROR:
        found = error_kind if error_kind is not None else classification.error_kind
        return Delivery.NOT_SENT if found in _NOT_SENT_KINDS else Delivery.MAY_HAVE_RUN
    # STREAM_INCOMPLETE, MALFORMED_JSON, INVALID_ENVELOPE: sent, and no answer to read.
    return Delivery.MAY_HAVE_RUN
