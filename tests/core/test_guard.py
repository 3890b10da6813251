"""The duplicate guard's core (core/guard.py): its memory and its decisions, no transport."""

from __future__ import annotations

import json
from typing import Any

from mcp_safe_retry import Idempotency
from mcp_safe_retry.core.attempt_kinds import AttemptKind, ErrorKind
from mcp_safe_retry.core.call_ledger import LedgerTable
from mcp_safe_retry.core.duplicate import EarlierCall, LedgerState
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


def table_of(mode: DuplicateGuard = DuplicateGuard.HOLD, **kw: Any) -> GuardTable:
    return GuardTable(mode, kw.pop("window", 600.0), LedgerTable(clock=lambda: 0.0, **kw))


def claim(table: GuardTable, now: float, consent: bool = False, **kw: Any) -> Any:
    """Claim a call as its request leaves: (the duplicate found, the ledger that decided)."""
    return table.claim(
        kw.pop("server", SERVER),
        kw.pop("facts", facts()),
        consent,
        owner=kw.pop("owner", "me"),
        started_at=1_800_000_000.0,
        session_id="s1",
        now=now,
    )


def settle(table: GuardTable, classification: Classification, now: float, **kw: Any) -> None:
    call = kw.pop("facts", facts())
    began = Fixed(call, Idempotency.UNSAFE, None, None, None, 0.0, 1_800_000_000.0, None)
    table.settled(
        kw.pop("server", SERVER),
        began,
        [attempt(classification)],
        classification,
        owner=kw.pop("owner", "me"),
        unseen=kw.pop("unseen", False),
        session_id="s1",
        now=now,
    )


def look(table: GuardTable, now: float, **kw: Any) -> EarlierCall | None:
    call = kw.pop("facts", facts())
    return table.ledger.look(kw.pop("server", SERVER), str(call.identity), now)


def test_a_call_is_in_flight_from_its_claim_and_an_answer_its_caller_saw_ends_it() -> None:
    table = table_of()
    assert claim(table, 0.0) == (None, "process")
    twin, decided_by = claim(table, 0.5, facts=facts(id=2), owner="twin")  # sent meanwhile
    assert twin is not None and twin.verdict is Verdict.HELD and decided_by == "process"
    assert twin.earlier.state is LedgerState.IN_FLIGHT and twin.earlier.request_id == 1
    held_twin = held(twin, "tools/call charge")
    assert held_twin.outcome is Outcome.DUPLICATE_IN_FLIGHT
    assert "has no answer yet: it is still running" in (held_twin.detail or "")
    settle(table, CONNECT, 0.6, owner="twin")  # the held twin ends: the claim is not its own
    assert look(table, 0.7) is not None
    settle(table, OK, 1.0)  # answered, and its caller saw it
    assert look(table, 1.1) is None and claim(table, 2.0, owner="next") == (None, "process")


def test_a_call_that_may_have_run_holds_its_repeat_and_an_answer_ends_it() -> None:
    table = table_of()
    claim(table, 0.0)
    settle(table, DROPPED, 0.0)
    found, _ = claim(table, 1.0, facts=facts(id=2), owner="again")  # another id, same call
    assert found is not None and found.verdict is Verdict.HELD
    earlier = found.earlier
    assert (earlier.request_id, earlier.delivery, earlier.outcome, earlier.state) == (
        1,
        Delivery.MAY_HAVE_RUN,
        "NETWORK_ERROR",
        LedgerState.MAY_HAVE_RUN,
    )
    assert earlier.error_kind == "read" and "session" not in found.to_dict()
    assert found.to_dict()["ledger"] == "process"
    settle(table, CONNECT, 2.0, owner="again")  # a repeat that was never sent changes nothing
    assert look(table, 3.0) is not None
    with_consent, _ = claim(table, 3.5, consent=True, owner="allowed")
    assert with_consent is not None and with_consent.verdict is Verdict.ALLOWED
    settle(table, OK, 4.0, owner="allowed")  # a repeat that was answered ends the hold
    assert look(table, 5.0) is None and len(table.ledger) == 0  # type: ignore[arg-type]


def test_an_answer_that_came_after_its_caller_stopped_waiting_keeps_the_hold() -> None:
    table = table_of()
    claim(table, 0.0)
    settle(table, OK, 1.0, unseen=True)
    found, _ = claim(table, 2.0, owner="again")
    assert found is not None and found.earlier.state is LedgerState.UNSEEN
    detail = held(found, "tools/call charge").detail or ""
    assert "ran: its answer (TOOL_SUCCESS) came after its caller stopped waiting" in detail


def test_never_held_other_arguments_another_server_a_consent() -> None:
    table = table_of()
    claim(table, 0.0)
    settle(table, DROPPED, 0.0)
    assert claim(table, 1.0, facts=facts(amount=2), owner="b")[0] is None
    assert claim(table, 1.0, server="http://b.test/mcp", owner="c")[0] is None
    allowed = claim(table, 1.0, consent=True, owner="d")[0]
    assert allowed is not None and allowed.verdict is Verdict.ALLOWED
    labelled = table_of(DuplicateGuard.LABEL)
    claim(labelled, 0.0)
    settle(labelled, DROPPED, 0.0)
    found = claim(labelled, 1.0, owner="e")[0]
    assert found is not None and found.verdict is Verdict.LABELLED


def test_answered_earlier_calls_are_not_remembered() -> None:
    table = table_of()
    for answered in (
        OK,
        verdict(Outcome.TOOL_ERROR),
        verdict(Outcome.JSONRPC_ERROR, code=-32602),
        verdict(Outcome.HTTP_ERROR, status=503),
    ):
        claim(table, 0.0)
        settle(table, answered, 0.0)
    assert len(table.ledger) == 0  # type: ignore[arg-type]


def test_memory_is_bounded_by_the_window_and_the_count() -> None:
    table = table_of(window=10.0, capacity=3)
    for n in range(5):
        claim(table, float(n), facts=facts(n=n))
        settle(table, DROPPED, float(n), facts=facts(n=n))
    assert len(table.ledger) == 3  # type: ignore[arg-type]  # the two oldest forgotten
    assert look(table, 5.0, facts=facts(n=0)) is None
    assert look(table, 5.0, facts=facts(n=4)) is not None
    assert look(table, 13.9, facts=facts(n=4)) is not None  # 10 s after
    assert look(table, 14.5, facts=facts(n=4)) is None
    assert len(table.ledger) == 0  # type: ignore[arg-type]  # expired ones are dropped


def test_the_guard_watches_unsafe_tool_calls_only() -> None:
    table = table_of()
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
    table = table_of()
    claim(table, 0.0)
    settle(table, DROPPED, 0.0)
    found = claim(table, 1.0, owner="again")[0]
    assert found is not None
    classification = held(found, "tools/call charge")
    assert classification.outcome is Outcome.DUPLICATE_HELD
    assert classification.error_kind == "duplicate_held"
    detail = classification.detail or ""
    assert detail.startswith("tools/call charge not sent")
    assert "2027-01-15T08:00:00+00:00" in detail and "request id 1" in detail
    assert "ended NETWORK_ERROR (ReadError: reset)" in detail
    assert "delivery may_have_run" in detail
