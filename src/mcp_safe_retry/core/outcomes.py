"""The outcome vocabulary: what became of one JSON-RPC message (``Outcome``), the layer that
decided it (``Layer``), and the verdict that carries both (``Classification``)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import attrs

__all__ = [
    "ACCEPTED_REQUEST",
    "LAYER_OF",
    "NOT_FAILURES",
    "SUCCESSES",
    "Classification",
    "Layer",
    "Outcome",
    "verdict",
]


class Layer(StrEnum):
    """Where an outcome was decided."""

    TRANSPORT = "transport"
    PROTOCOL = "protocol"
    INTERACTION = "interaction"
    APPLICATION = "application"


class Outcome(StrEnum):
    """What happened to one JSON-RPC message."""

    TOOL_SUCCESS = "TOOL_SUCCESS"
    HTTP_ERROR = "HTTP_ERROR"
    JSONRPC_ERROR = "JSONRPC_ERROR"
    TOOL_ERROR = "TOOL_ERROR"
    INPUT_REQUIRED = "INPUT_REQUIRED"
    MALFORMED_JSON = "MALFORMED_JSON"
    INVALID_ENVELOPE = "INVALID_ENVELOPE"
    INVALID_TOOL_RESULT = "INVALID_TOOL_RESULT"
    RPC_SUCCESS = "RPC_SUCCESS"
    ACCEPTED = "ACCEPTED"
    NETWORK_ERROR = "NETWORK_ERROR"
    STREAM_INCOMPLETE = "STREAM_INCOMPLETE"
    CIRCUIT_OPEN = "CIRCUIT_OPEN"  # not sent: the circuit breaker held the request back
    # Not sent: the same UNSAFE call may have run already (the duplicate guard, core/guard.py).
    DUPLICATE_HELD = "DUPLICATE_HELD"
    # Not sent: the same UNSAFE call is still in flight (the ledger, core/call_ledger.py).
    DUPLICATE_IN_FLIGHT = "DUPLICATE_IN_FLIGHT"
    REDIRECT = "REDIRECT"  # a hop: the client sends the request on to the Location
    # The Tasks extension (core/tasks.py): a tools/call answered with a task (the tool has
    # not finished: the server runs it), a poll of a task still running, a task cancelled.
    TASK_CREATED = "TASK_CREATED"
    TASK_WORKING = "TASK_WORKING"
    TASK_CANCELLED = "TASK_CANCELLED"


LAYER_OF: dict[Outcome, Layer] = {
    Outcome.TOOL_SUCCESS: Layer.APPLICATION,
    Outcome.TOOL_ERROR: Layer.APPLICATION,
    Outcome.INPUT_REQUIRED: Layer.INTERACTION,
    Outcome.RPC_SUCCESS: Layer.PROTOCOL,
    Outcome.JSONRPC_ERROR: Layer.PROTOCOL,
    Outcome.MALFORMED_JSON: Layer.PROTOCOL,
    Outcome.INVALID_ENVELOPE: Layer.PROTOCOL,
    Outcome.INVALID_TOOL_RESULT: Layer.PROTOCOL,
    Outcome.HTTP_ERROR: Layer.TRANSPORT,
    Outcome.ACCEPTED: Layer.TRANSPORT,
    Outcome.NETWORK_ERROR: Layer.TRANSPORT,
    Outcome.STREAM_INCOMPLETE: Layer.TRANSPORT,
    Outcome.CIRCUIT_OPEN: Layer.TRANSPORT,
    Outcome.DUPLICATE_HELD: Layer.TRANSPORT,
    Outcome.DUPLICATE_IN_FLIGHT: Layer.TRANSPORT,
    Outcome.REDIRECT: Layer.TRANSPORT,
    Outcome.TASK_CREATED: Layer.INTERACTION,
    Outcome.TASK_WORKING: Layer.INTERACTION,
    Outcome.TASK_CANCELLED: Layer.APPLICATION,
}

SUCCESSES = frozenset({Outcome.TOOL_SUCCESS, Outcome.RPC_SUCCESS, Outcome.ACCEPTED})
"""Outcomes that end a call as the caller hoped (INPUT_REQUIRED is neither: it continues)."""
NOT_FAILURES = SUCCESSES | {
    Outcome.INPUT_REQUIRED,
    Outcome.REDIRECT,
    Outcome.TASK_CREATED,
    Outcome.TASK_WORKING,
}
"""Outcomes that are no failure: the successes, a server asking for more input, a redirect
(a hop the client follows), a task created or still running (the tool has not finished)."""


@attrs.frozen
class Classification:
    """The verdict on one exchange.

    ``status`` is set only for HTTP_ERROR, REDIRECT and a JSONRPC_ERROR that came in a
    non-2xx answer; ``code`` is the JSON-RPC error code wherever one was found (also inside
    a non-2xx body). The other fields help a person and
    never take part in ``as_dict()``.
    """

    layer: Layer
    outcome: Outcome
    status: int | None = None
    code: int | None = None
    message: str | None = None
    result_type: str | None = None
    detail: str | None = None
    error_kind: str | None = None
    # A task answer (core/tasks.py): the task it names and the status it gives (the record
    # shows them: ``CallRecord.task``).
    task_id: str | None = attrs.field(default=None, repr=False)
    task_status: str | None = attrs.field(default=None, repr=False)
    # A list read's failure answered with its last good answer (core/listings.py): how old
    # that answer was, in seconds.
    stale_age: float | None = attrs.field(default=None, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """``layer`` and ``outcome``, plus ``status`` and ``code`` when set: nothing else."""
        out: dict[str, Any] = {"layer": str(self.layer), "outcome": str(self.outcome)}
        if self.status is not None:
            out["status"] = self.status
        if self.code is not None:
            out["code"] = self.code
        return out

    @property
    def ok(self) -> bool:
        """True for a completed success (tool success, RPC success, accepted notification)."""
        return self.outcome in SUCCESSES


def verdict(outcome: Outcome, **fields: Any) -> Classification:
    """A Classification in the layer its outcome belongs to."""
    return Classification(layer=LAYER_OF[outcome], outcome=outcome, **fields)


ACCEPTED_REQUEST = verdict(Outcome.INVALID_ENVELOPE, detail="202 Accepted answered a request")
"""The verdict on a request answered ``202 Accepted``: no answer in this response. Invalid
over Streamable HTTP (a request gets SSE or JSON), and how the HTTP+SSE transport (2024-11-05)
answers every request, whose response travels on the event stream the client reads (see
``delivery.delivery_of``)."""
