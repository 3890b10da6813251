"""The delivery table (core/delivery.py): whether the server can have run an attempt."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_safe_retry.core.attempt_kinds import AttemptKind, ErrorKind
from mcp_safe_retry.core.classify import classify
from mcp_safe_retry.core.delivery import delivery_of
from mcp_safe_retry.core.outcomes import ACCEPTED_REQUEST, verdict
from mcp_safe_retry.records import Delivery, Outcome

NOT_SENT, ANSWERED, MAY_HAVE_RUN = Delivery.NOT_SENT, Delivery.ANSWERED, Delivery.MAY_HAVE_RUN


def _net(kind: ErrorKind) -> Any:
    return pytest.param(verdict(Outcome.NETWORK_ERROR, error_kind=kind), None, id=f"net-{kind}")


def _http(status: int, code: int | None = None) -> Any:
    name = f"http-{status}" + ("-jsonrpc" if code is not None else "")
    return pytest.param(verdict(Outcome.HTTP_ERROR, status=status, code=code), None, id=name)


def _of(outcome: Outcome) -> Any:
    return pytest.param(verdict(outcome), None, id=outcome.value.lower())


TABLE = [
    # not sent: the request never reached the server
    (NOT_SENT, _net(ErrorKind.CONNECT)),
    (NOT_SENT, _net(ErrorKind.POOL)),
    (NOT_SENT, _net(ErrorKind.LOCAL)),
    (NOT_SENT, _of(Outcome.CIRCUIT_OPEN)),
    (NOT_SENT, _of(Outcome.DUPLICATE_HELD)),
    (NOT_SENT, _of(Outcome.DUPLICATE_IN_FLIGHT)),
    # answered: any JSON-RPC answer, any status that says the request was not processed
    (ANSWERED, _of(Outcome.TOOL_SUCCESS)),
    (ANSWERED, _of(Outcome.TASK_CREATED)),  # the server holds the call as a task
    (ANSWERED, _of(Outcome.TASK_WORKING)),
    (ANSWERED, _of(Outcome.TASK_CANCELLED)),
    (ANSWERED, pytest.param(ACCEPTED_REQUEST, None, id="202-to-a-request")),
    (ANSWERED, _of(Outcome.TOOL_ERROR)),
    (ANSWERED, _of(Outcome.JSONRPC_ERROR)),
    (ANSWERED, _of(Outcome.INPUT_REQUIRED)),
    (ANSWERED, _of(Outcome.INVALID_TOOL_RESULT)),
    (ANSWERED, _of(Outcome.RPC_SUCCESS)),
    (ANSWERED, _of(Outcome.ACCEPTED)),
    (ANSWERED, pytest.param(verdict(Outcome.REDIRECT, status=307), None, id="redirect-307")),
    (ANSWERED, _http(400)),
    (ANSWERED, _http(401)),
    (ANSWERED, _http(404)),
    (ANSWERED, _http(404, code=-32600)),  # an expired session
    (ANSWERED, _http(408)),
    (ANSWERED, _http(429)),
    (ANSWERED, _http(307)),
    (ANSWERED, _http(501)),
    (ANSWERED, _http(503)),
    (ANSWERED, _http(505)),
    (ANSWERED, _http(500, code=-32603)),  # the server's MCP layer reported the failure
    # may have run: sent, and no answer says what became of it
    (MAY_HAVE_RUN, _http(500)),
    (MAY_HAVE_RUN, _http(502)),
    (MAY_HAVE_RUN, _http(504)),
    (MAY_HAVE_RUN, _http(507)),
    (MAY_HAVE_RUN, _net(ErrorKind.TIMEOUT)),
    (MAY_HAVE_RUN, _net(ErrorKind.READ)),
    (MAY_HAVE_RUN, _net(ErrorKind.WRITE)),
    (MAY_HAVE_RUN, _net(ErrorKind.PROTOCOL)),
    (MAY_HAVE_RUN, _net(ErrorKind.NETWORK)),
    (MAY_HAVE_RUN, _net(ErrorKind.OVERSIZED)),
    (MAY_HAVE_RUN, _net(ErrorKind.DECODING)),
    (MAY_HAVE_RUN, _net(ErrorKind.INTERNAL)),
    (MAY_HAVE_RUN, _net(ErrorKind.CANCELLED)),
    (MAY_HAVE_RUN, _of(Outcome.STREAM_INCOMPLETE)),
    (MAY_HAVE_RUN, _of(Outcome.MALFORMED_JSON)),
    (MAY_HAVE_RUN, _of(Outcome.INVALID_ENVELOPE)),
]

CASES = [
    pytest.param(p.values[0], expected, id=p.id)  # type: ignore[attr-defined]
    for expected, p in TABLE
]


@pytest.mark.parametrize(("classification", "expected"), CASES)
def test_delivery_table(classification: Any, expected: Delivery) -> None:
    assert delivery_of(classification) is expected


def test_every_outcome_and_error_kind_has_a_row() -> None:
    rows = [p.values[0] for _, p in TABLE]  # type: ignore[attr-defined]
    assert {c.outcome for c in rows} == set(Outcome)
    assert {c.error_kind for c in rows if c.outcome is Outcome.NETWORK_ERROR} == set(ErrorKind)
    assert {expected for expected, _ in TABLE} == set(Delivery)


def test_a_held_attempt_was_never_sent_whatever_ended_it() -> None:
    # A call abandoned while it waited for the breaker: recorded HELD, never sent.
    cancelled = verdict(Outcome.NETWORK_ERROR, error_kind=ErrorKind.CANCELLED)
    assert delivery_of(cancelled, kind=AttemptKind.HELD) is NOT_SENT
    assert delivery_of(cancelled, kind=AttemptKind.POST) is MAY_HAVE_RUN


def test_the_attempts_error_kind_wins_over_the_classifications() -> None:
    timeout = verdict(Outcome.NETWORK_ERROR, error_kind=ErrorKind.TIMEOUT)
    assert delivery_of(timeout, ErrorKind.CONNECT) is NOT_SENT


def test_a_202_to_a_request_is_answered_elsewhere_any_other_invalid_envelope_may_have_run() -> None:
    # The HTTP+SSE transport (2024-11-05) answers every POST 202 and sends the response on
    # its event stream: the server took the request and the client gets its answer there.
    accepted = classify(202, b"", content_type=None, expected_id=1, method="tools/call")
    assert accepted == ACCEPTED_REQUEST and accepted.outcome is Outcome.INVALID_ENVELOPE
    assert delivery_of(accepted) is ANSWERED
    other = verdict(Outcome.INVALID_ENVELOPE, detail="response id does not match")
    assert delivery_of(other) is MAY_HAVE_RUN
