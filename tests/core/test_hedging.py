"""The hedged-race driver (core/hedging.py), driven without I/O: each copy's events in, the
shell's commands out (launch, wait, hand the winner's answer on) and the losers to cancel."""

from __future__ import annotations

import json

from mcp_safe_retry import Idempotency, RetryBudget, RetryPolicy
from mcp_safe_retry.core.attempt_kinds import AttemptKind, ErrorKind
from mcp_safe_retry.core.call import Call
from mcp_safe_retry.core.call import begin as begin_call
from mcp_safe_retry.core.commands import Answer, Ask, Read, Refuse, Sleep, Stream
from mcp_safe_retry.core.engine import Engine
from mcp_safe_retry.core.events import Head
from mcp_safe_retry.core.hedge_copies import CopyState
from mcp_safe_retry.core.hedging import Hedging, Launch, Loser, hedged
from mcp_safe_retry.core.records import RetryOrigin
from mcp_safe_retry.records import Decision, Outcome, Reason
from tests.core import drive
from tests.core.drive import JSON, SSE, URL, Clock, answer, handed_on, request

POLICY = RetryPolicy(
    tools={"lookup": Idempotency.READ}, jitter="none", hedge_after=0.05, max_hedges=1
)
SESSION = {"mcp-session-id": "s-1", "mcp-protocol-version": "2025-11-25"}


def engine(clock: Clock, policy: RetryPolicy = POLICY, **options: object) -> Engine:
    return drive.engine(clock, policy=policy, **options)


def race(e: Engine, headers: dict[str, str] | None = None, tool: str = "lookup") -> Hedging:
    headers = headers if headers is not None else {}
    call = begin_call(e, request(tool), headers, {}, URL)
    assert call is not None
    hedging = hedged(e, call, URL, headers)
    assert hedging is not None
    return hedging


def launched_id(launch: object) -> object:
    assert type(launch) is Launch and launch.content is not None
    return json.loads(launch.content)["id"]


def notified(number: int, wire_id: object) -> Loser:
    """A loser cancelled with ``notifications/cancelled`` for its own id (2025, a session)."""
    params = {"requestId": wire_id, "reason": "hedged request lost"}
    notice = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
    body = json.dumps(notice, separators=(",", ":")).encode()
    return Loser(number, wire_id, body, (("mcp-method", None), ("mcp-name", None)), 2.0)  # type: ignore[arg-type]


def closed(number: int, wire_id: object) -> Loser:
    """A loser cancelled by closing its response only."""
    return Loser(number, wire_id, None, (("mcp-method", None), ("mcp-name", None)), 2.0)  # type: ignore[arg-type]


def fates(call: Call) -> list[tuple[int, AttemptKind, str | None, Reason | None]]:
    return [
        (a.number, a.kind, a.fate, a.decision.reason if a.decision else None)
        for a in call.ref.current.attempts
    ]


def test_only_a_read_call_with_a_hedge_delay_is_raced() -> None:
    clock = Clock()
    e = engine(clock)
    unsafe = begin_call(e, request("charge"), {}, {}, URL)
    assert unsafe is not None
    assert hedged(e, unsafe, URL, {}) is None  # an UNSAFE call is never sent twice at once
    plain = engine(clock, RetryPolicy(tools={"lookup": Idempotency.READ}))
    call = begin_call(plain, request(), {}, {}, URL)
    assert call is not None
    assert hedged(plain, call, URL, {}) is None  # hedging off


def test_the_first_copy_goes_under_the_caller_s_id_and_a_hedge_is_due_after_the_delay() -> None:
    clock = Clock()
    h = race(engine(clock))
    assert h.start() == Launch(1, None)  # the caller's body, as it is
    assert h.wait() == 0.05
    assert h.hedge() is None  # not due yet
    clock.now = 0.05
    assert h.wait() == 0.0
    launch = h.hedge()
    wire_id = launched_id(launch)
    assert launch == Launch(2, launch.content)  # type: ignore[union-attr]
    assert str(wire_id).startswith("mcp-safe-retry-")
    assert h.wait() is None  # max_hedges=1: none more
    assert h.hedge() is None


def test_the_hedge_wins_the_first_copy_is_cancelled_the_answer_goes_on_under_the_caller_s_id() -> (
    None
):
    clock = Clock()
    e = engine(clock)
    h = race(e, SESSION)
    h.start()
    clock.now = 0.05
    wire_id = launched_id(h.hedge())
    clock.now = 0.07
    assert h.headed(2, JSON) == Read(e.max_event_bytes)
    assert h.received(2, answer(wire_id)) == Answer(handed_on())
    # In a 2025 session the loser is cancelled with notifications/cancelled for its id.
    assert h.losers() == (notified(1, 7),)
    assert h.losers() == ()  # each named once
    assert h.race is not None and h.race.winner == 2
    assert [c.state for c in h.race.copies] == [CopyState.LOST, CopyState.WON]
    call = h.call
    assert call.done
    assert call.ref.current.outcome == Outcome.TOOL_SUCCESS
    assert fates(call) == [
        (1, AttemptKind.POST, "lost", None),  # a copy's fate, not a decision
        (2, AttemptKind.HEDGE, "won", Reason.SUCCESS),
    ]
    lost = call.ref.current.attempts[0]
    assert lost.error_kind == ErrorKind.CANCELLED
    assert lost.classification.detail == "hedged copy cancelled: another copy's answer won"
    assert [a.retry_origin for a in call.ref.current.attempts] == [
        RetryOrigin.NONE,
        RetryOrigin.SDK,
    ]
    # The window learnt the winner's latency (0.02 s) and the loser's, censored (>= 0.07 s).
    assert e.latencies.window(e.server_key(URL)).count == 2


def test_the_first_copy_wins_the_hedge_is_closed_without_a_notification_outside_a_session() -> None:
    clock = Clock()
    e = engine(clock)
    h = race(e)
    h.start()
    clock.now = 0.05
    wire_id = launched_id(h.hedge())
    assert h.headed(1, JSON) == Read(e.max_event_bytes)
    assert h.received(1, answer(7)) == Answer(None)  # its own id: as it came
    assert h.losers() == (closed(2, wire_id),)
    # The loser's late answer is dropped: nothing to do but close it.
    assert h.headed(2, JSON) == Read(e.max_event_bytes)
    assert h.received(2, answer(wire_id)) is None
    assert h.losers() == ()
    assert fates(h.call) == [
        (1, AttemptKind.POST, "won", Reason.SUCCESS),
        (2, AttemptKind.HEDGE, "lost", None),
    ]


def test_a_copy_that_fails_transiently_waits_for_the_other() -> None:
    clock = Clock()
    e = engine(clock)
    h = race(e)
    h.start()
    clock.now = 0.05
    wire_id = launched_id(h.hedge())
    h.headed(1, Head(503))
    assert h.received(1, b"") is None  # the hedge may still answer: wait for it
    h.headed(2, JSON)
    assert h.received(2, answer(wire_id)) == Answer(handed_on())
    assert h.losers() == ()
    assert fates(h.call) == [
        (1, AttemptKind.POST, "failed", None),
        (2, AttemptKind.HEDGE, "won", Reason.SUCCESS),
    ]


def test_every_copy_failed_the_call_s_retry_is_one_more_copy_after_its_backoff() -> None:
    clock = Clock()
    e = engine(clock)
    h = race(e)
    h.start()
    clock.now = 0.05
    hedge_id = launched_id(h.hedge())
    error = ConnectionResetError("reset")
    assert h.failed(2, error, ErrorKind.READ, "reset") is None
    h.headed(1, Head(503))
    assert h.received(1, b"") == Sleep(0.2)
    retry = h.slept()
    assert type(retry) is Launch and retry.number == 3
    retry_id = launched_id(retry)
    assert retry_id not in (7, hedge_id)
    h.headed(3, JSON)
    assert h.received(3, answer(retry_id)) == Answer(handed_on())
    assert [k for _, k, _, _ in fates(h.call)] == [
        AttemptKind.POST,
        AttemptKind.HEDGE,
        AttemptKind.POST,
    ]


def test_a_streamed_answer_commits_the_race_and_the_call_streams_it() -> None:
    clock = Clock()
    e = engine(clock)
    h = race(e, SESSION)
    h.start()
    clock.now = 0.05
    launched_id(h.hedge())
    assert type(h.headed(1, SSE)) is Stream  # it streams: the call stays with this copy
    [loser] = h.losers()
    assert loser == notified(2, loser.wire_id)
    # The race stays open until the stream ends (a break leaves the retry decision).
    assert h.race is not None and h.race.winner is None
    assert [c.state for c in h.race.copies] == [CopyState.IN_FLIGHT, CopyState.LOST]


def test_the_caller_giving_up_cancels_every_copy_the_first_without_a_notification() -> None:
    clock = Clock()
    h = race(engine(clock), SESSION)
    h.start()
    clock.now = 0.05
    wire_id = launched_id(h.hedge())
    # The caller's own notifications/cancelled names the first copy: only the hedge gets one.
    assert h.abandon() == (closed(1, 7), notified(2, wire_id))
    assert h.race is not None and h.race.abandoned


class Shared(RetryBudget):
    """A budget that says it does not answer inline: asked through the shell (``Ask``)."""

    answers_inline = False


def test_a_hedge_asks_a_shared_budget_first_and_its_no_stops_hedging() -> None:
    clock = Clock()
    budget = Shared()
    h = race(engine(clock, budget=budget))
    h.start()
    clock.now = 0.05
    assert h.hedge() == Ask(budget=budget)
    assert h.hedge_answered(False) is None
    assert h.wait() is None  # no hedge follows; the first copy races on alone
    h.headed(1, JSON)
    assert h.received(1, answer(7)) == Answer(None)


def test_a_shared_budget_s_yes_launches_the_hedge() -> None:
    clock = Clock()
    budget = Shared()
    h = race(engine(clock, budget=budget))
    h.start()
    clock.now = 0.05
    assert h.hedge() == Ask(budget=budget)
    launch = h.hedge_answered(True)
    assert type(launch) is Launch and launch.number == 2


def test_a_first_copy_the_breaker_holds_back_ends_the_race_unsent() -> None:
    from mcp_safe_retry import CircuitBreaker

    clock = Clock()
    breaker = CircuitBreaker(failure_threshold=1)
    e = engine(clock, breaker=breaker)
    breaker.record(e.server_key(URL), failed=True)
    h = race(e)
    refused = h.start()
    assert type(refused) is Refuse and refused.outcome is Outcome.CIRCUIT_OPEN
    assert h.losers() == ()
    assert h.race is None  # nothing was launched
    [attempt] = h.call.ref.current.attempts
    assert attempt.decision == Decision.stop(Reason.CIRCUIT_OPEN)
