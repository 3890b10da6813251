"""The sessions a transport has seen (core/session.py): renewals, ends, bounds, and the
renewal of one (the replayed initialize and its two steps), no transport."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from mcp_safe_retry.core.attempt_kinds import AttemptKind
from mcp_safe_retry.core.events import Head
from mcp_safe_retry.core.session import Handshake, Renewal, Sessions
from mcp_safe_retry.records import Outcome


def test_ended_sessions_are_remembered_within_a_bound() -> None:
    sessions = Sessions(limit=3)
    sessions.ending(None)  # a DELETE without a session ends nothing
    for name in ("a", "b", "c", "d"):
        sessions.ending(name)
    assert [sessions.ended(name) for name in "abcd"] == [False, True, True, True]
    sessions.end_answered("c", 200)
    sessions.end_answered("d", 405)  # the server keeps the session: it may still expire
    assert [sessions.ended(name) for name in "bcd"] == [True, True, False]


@given(st.lists(st.integers(0, 3), max_size=20))
def test_renewals_lead_every_old_id_to_the_newest_of_its_line(renewals: list[int]) -> None:
    """However the sessions of several clients are renewed, in whatever order, each old id
    leads to the newest session of its line, and every id of a line names its first."""
    sessions = Sessions()
    lines = [[f"first-{n}"] for n in range(4)]
    for n, which in enumerate(renewals):
        line = lines[which]
        sessions.renewed(line[-1], f"s-{n}")
        line.append(f"s-{n}")
    for line in lines:
        assert all(sessions.replacement(old) == line[-1] for old in line[:-1])
        assert sessions.replacement(line[-1]) is None
        assert {sessions.first(s) for s in line} == {line[0]}


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c"}},
}


def initialized(request_id: object, version: str) -> bytes:
    result = {"protocolVersion": version, "capabilities": {}, "serverInfo": {"name": "s"}}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


def test_a_renewal_replays_the_initialize_then_notifies_in_the_session_it_opened() -> None:
    renewal = Renewal(Handshake(INITIALIZE, "2025-11-25"), "wire-1")
    first = renewal.initialize()
    assert first.kind is AttemptKind.REINITIALISE
    assert json.loads(first.content or b"") == {**INITIALIZE, "id": "wire-1"}
    assert ("mcp-session-id", None) in first.headers  # outside any session
    head = Head(200, "application/json", session_id="s-2")
    classification, step = renewal.answered(head, initialized("wire-1", "2025-11-25"), 1 << 20)
    assert classification.outcome is Outcome.RPC_SUCCESS
    assert renewal.session == "s-2" and renewal.opened == (classification, head)
    assert step is not None and step.kind is AttemptKind.REINITIALISE
    assert json.loads(step.content or b"") == {
        "jsonrpc": "2.0",
        "method": "notifications/initialized",
    }
    assert ("mcp-session-id", "s-2") in step.headers
    assert ("mcp-protocol-version", "2025-11-25") in step.headers
    classification, step = renewal.answered(Head(202), b"", 1 << 20)
    assert classification.ok and step is None  # the renewal is over, and succeeded


def test_a_renewal_that_opens_no_session_or_another_version_fails() -> None:
    renewal = Renewal(Handshake(INITIALIZE, "2025-11-25"), "wire-1")
    renewal.initialize()
    no_session = Head(200, "application/json")
    classification, step = renewal.answered(no_session, initialized("wire-1", "2025-11-25"), 99999)
    assert (classification.outcome, classification.detail, step) == (
        Outcome.INVALID_ENVELOPE,
        "initialize opened no session",
        None,
    )
    assert renewal.session is None
    other = Head(200, "application/json", session_id="s-3")
    classification, step = renewal.answered(other, initialized("wire-1", "2025-06-18"), 99999)
    assert classification.outcome is Outcome.INVALID_ENVELOPE and step is None
    assert classification.detail == "the new session speaks '2025-06-18', not '2025-11-25'"
    assert renewal.opened is None


def test_a_renewal_s_failed_initialize_ends_it() -> None:
    renewal = Renewal(Handshake(INITIALIZE, None), "wire-1")
    classification, step = renewal.answered(Head(500, "text/plain"), b"down", 1 << 20)
    assert classification.outcome is Outcome.HTTP_ERROR and step is None


def test_a_failed_renewal_is_counted_and_a_renewed_session_replaces_the_old() -> None:
    sessions = Sessions()
    sessions.opened("s-1", Handshake(INITIALIZE, "2025-11-25"))
    assert sessions.handshake("s-1") == Handshake(INITIALIZE, "2025-11-25")
    assert sessions.failures("s-1") == 0
    sessions.failed("s-1")
    assert sessions.failures("s-1") == 1 and sessions.replacement("s-1") is None
    sessions.renewed("s-1", "s-2")
    assert sessions.replacement("s-1") == "s-2"
    assert sessions.handshake("s-2") == Handshake(INITIALIZE, "2025-11-25")  # opened like s-1
