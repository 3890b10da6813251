"""The duplicate guard's core (core/guard.py): its memory and its decisions, no transport."""

from __future__ import annotations

import json
from typing import Any

from mcp_safe_retry import Idempotency
from mcp_safe_retry.core.attempt_kinds import AttemptKind, ErrorKind
from mcp_safe_retry.core.guard import GuardTable, Verdict, call_delivery, held
from mcp_safe_retry.core.jsonrpc import parse_request
from mcp_safe_retry.core.outcomes import Classification, verdict
from mcp_safe_retry.core.records import AttemptValues, Fixed
from mcp_safe_retry.policy import DuplicateGuard
from mcp_safe_retry.records import Delivery, Outcome, RetryOrigin

SERVER = "http://a.test/mcp"
DROPPED = verdict(Outcome.NETWORK_ERROR, error_kind=ErrorKind.READ, detail="ReadError: reset")
OK = verdict(Outcome.TOOL_SUCCESS)
CONNECT = verdict(Outcome.NETWORK_ERROR, error_kind=ErrorKind.CONNECT)


def attempt(classification: Classification, kind: str = AttemptKind.POST) -> AttemptValues:
    return AttemptValues(
        1,
        RetryOrigin.NONE,
        1,
        classification,
        None,
        None,
        classification.error_kind,
        0.0,
        None,
        None,
        0.0,
        0.0,
        kind,
    )


def facts(tool: str = "charge", id: Any = 1, **arguments: Any) -> Any:
    params = {"name": tool, "arguments": arguments}
    body = {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}
    parsed = parse_request(json.dumps(body).encode())
    assert parsed is not None
    return parsed


def settle(table: GuardTable, classification: Classification, now: float, **kw: Any) -> None:
    call = kw.pop("facts", facts())
    began = Fixed(call, Idempotency.UNSAFE, None, None, None, 0.0, 1_800_000_000.0, None)
    table.settled(
        kw.pop("server", SERVER),
        began,
        [attempt(classification)],
        classification,
        session_id="s1",
        now=now,
    )


def test_a_call_that_may_have_run_holds_its_repeat_and_an_answer_ends_it() -> None:
    table = GuardTable()
    assert table.look(SERVER, facts().identity, False, 0.0) is None
    settle(table, DROPPED, 0.0)
    found = table.look(SERVER, facts(id=2).identity, False, 1.0)  # another id, same call
    assert found is not None and found.verdict is Verdict.HELD
    earlier = found.earlier
    assert (earlier.request_id, earlier.delivery, earlier.outcome) == (
        1,
        Delivery.MAY_HAVE_RUN,
        "NETWORK_ERROR",
    )
    assert earlier.error_kind == "read" and "session" not in found.to_dict()
    settle(table, CONNECT, 2.0)  # a repeat that was never sent changes nothing
    assert table.look(SERVER, facts().identity, False, 3.0) is not None
    settle(table, OK, 4.0)  # a repeat that was answered ends the hold
    assert table.look(SERVER, facts().identity, False, 5.0) is None and len(table) == 0


def test_never_held_other_arguments_another_server_a_consent() -> None:
    table = GuardTable()
    settle(table, DROPPED, 0.0)
    assert table.look(SERVER, facts(amount=2).identity, False, 1.0) is None
    assert table.look("http://b.test/mcp", facts().identity, False, 1.0) is None
    allowed = table.look(SERVER, facts().identity, True, 1.0)
    assert allowed is not None and allowed.verdict is Verdict.ALLOWED
    labelled = GuardTable(DuplicateGuard.LABEL)
    settle(labelled, DROPPED, 0.0)
    found = labelled.look(SERVER, facts().identity, False, 1.0)
    assert found is not None and found.verdict is Verdict.LABELLED


def test_answered_earlier_calls_are_not_remembered() -> None:
    table = GuardTable()
    for answered in (
        OK,
        verdict(Outcome.TOOL_ERROR),
        verdict(Outcome.JSONRPC_ERROR, code=-32602),
        verdict(Outcome.HTTP_ERROR, status=503),
    ):
        settle(table, answered, 0.0)
    assert len(table) == 0


def test_memory_is_bounded_by_the_window_and_the_count() -> None:
    table = GuardTable(window=10.0, capacity=3)
    for n in range(5):
        settle(table, DROPPED, float(n), facts=facts(n=n))
    assert len(table) == 3  # the two oldest forgotten
    assert table.look(SERVER, facts(n=0).identity, False, 5.0) is None
    assert table.look(SERVER, facts(n=4).identity, False, 5.0) is not None
    assert table.look(SERVER, facts(n=4).identity, False, 14.0) is not None  # 10 s after
    assert table.look(SERVER, facts(n=4).identity, False, 14.5) is None
    assert len(table) == 0  # expired ones are dropped by the look


def test_the_guard_watches_unsafe_tool_calls_only() -> None:
    table = GuardTable()
    call = facts()
    assert table.guards(call, Idempotency.UNSAFE)
    assert not table.guards(call, Idempotency.READ)
    listing = parse_request(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
    assert listing is not None and not table.guards(listing, Idempotency.UNSAFE)
    note = parse_request(b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}')
    assert note is not None and not table.guards(note, Idempotency.UNSAFE)
    assert not GuardTable(DuplicateGuard.OFF).guards(call, Idempotency.UNSAFE)


def test_a_calls_delivery_is_its_newest_attempt_that_reached_the_server() -> None:
    renewal = attempt(CONNECT, AttemptKind.REINITIALISE)
    assert call_delivery([]) is Delivery.NOT_SENT
    assert call_delivery([attempt(CONNECT), attempt(DROPPED)]) is Delivery.MAY_HAVE_RUN
    # An unsent attempt after one that may have run (held by the breaker) changes nothing.
    breaker = verdict(Outcome.CIRCUIT_OPEN)
    assert call_delivery([attempt(DROPPED), attempt(breaker, AttemptKind.HELD)]) is (
        Delivery.MAY_HAVE_RUN
    )
    lost = verdict(Outcome.HTTP_ERROR, status=404, code=-32600)
    assert call_delivery([attempt(lost), renewal]) is Delivery.ANSWERED  # the 404 decides


def test_the_held_verdict_names_the_earlier_call() -> None:
    table = GuardTable()
    settle(table, DROPPED, 0.0)
    found = table.look(SERVER, facts().identity, False, 1.0)
    assert found is not None
    classification = held(found, "tools/call charge")
    assert classification.outcome is Outcome.DUPLICATE_HELD
    assert classification.error_kind == "duplicate_held"
    detail = classification.detail or ""
    assert detail.startswith("tools/call charge not sent")
    assert "2027-01-15T08:00:00+00:00" in detail and "request id 1" in detail
    assert "ended NETWORK_ERROR (ReadError: reset)" in detail
    assert "delivery may_have_run" in detail
