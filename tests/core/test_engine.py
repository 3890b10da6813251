"""Per-transport state (core/engine.py): fresh ids, server keys, renewed sessions, the calls
a resuming GET finds, and what a budget or breaker of the shell's own is asked through."""

from __future__ import annotations

from mcp_safe_retry import CircuitBreaker, RetryBudget
from mcp_safe_retry.core.commands import Ask, Read
from mcp_safe_retry.core.servers import server_key
from tests.core.drive import begin, engine


def test_fresh_ids_are_never_repeated_and_carry_the_prefix_the_shell_gave() -> None:
    a, b = engine(id_prefix="0a1b2c3d"), engine(id_prefix="4e5f6a7b")
    ids = [a.fresh_id() for _ in range(100)]
    assert len(set(ids)) == 100
    assert ids[:2] == ["mcp-safe-retry-0a1b2c3d-1", "mcp-safe-retry-0a1b2c3d-2"]
    assert not set(ids) & {b.fresh_id() for _ in range(100)}


def test_a_server_key_is_remembered_per_url_within_a_bound() -> None:
    e = engine()
    assert e.server_key("http://H:80/mcp?x=1") == server_key("http://H:80/mcp?x=1")
    for n in range(1100):
        assert e.server_key(f"http://h/{n}") == f"http://h/{n}"
    assert len(e._keys) <= 1024  # a transport sent to many URLs starts over


def test_a_renewed_session_is_what_requests_go_out_with() -> None:
    e = engine()
    assert e.caller_edits({}) == () and e.caller_edits({"mcp-session-id": "s-1"}) == ()
    e.sessions.renewed("s-1", "s-2")
    assert e.caller_edits({"mcp-session-id": "s-1"}) == (("mcp-session-id", "s-2"),)


def test_a_resuming_get_finds_its_call_once_and_only_the_newest_256_are_kept() -> None:
    e = engine()
    calls = [begin(e, request_id=n) for n in range(300)]
    for n, call in enumerate(calls):
        e.await_resumption(f"event-{n}", call)
    assert e.resumed(None) is None and e.resumed("") is None
    assert e.resumed("event-0") is None  # dropped: older than the newest 256
    found = e.resumed("event-299")
    assert found is calls[299]
    assert e.resumed("event-299") is None  # found once


def test_a_budget_or_breaker_that_answers_inline_is_asked_inline_any_other_through_the_shell() -> (
    None
):
    class Shared(RetryBudget):
        answers_inline = False

    class Asked(CircuitBreaker):
        answers_inline = False

    plain = engine(policy=None)
    assert plain.ask_budget is None and not plain.breaker_inline
    inline = engine(breaker=CircuitBreaker())
    assert inline.ask_budget is None and inline.breaker_inline
    budget = Shared()
    shell = engine(budget=budget, breaker=Asked())
    assert shell.ask_budget == Ask(budget=budget) and not shell.breaker_inline
    assert shell.read_whole == Read(shell.max_event_bytes)
