"""The gates the shell's executor tells what a command met (core/gates.py): a copy's events
go to its race under its number, as a call's would go to the call; a hedge's asked answers
go to the hedge."""

from __future__ import annotations

from mcp_safe_retry.core.attempt_kinds import ErrorKind
from mcp_safe_retry.core.commands import Ask, Launch, Read, Sleep
from mcp_safe_retry.core.events import Head
from mcp_safe_retry.core.gates import CopyGate, HedgeGate
from tests.core.drive import Clock
from tests.core.test_hedging import Shared, engine, launched_id, race


def test_a_copy_s_gate_tells_the_race_what_the_copy_met_as_a_call_s_would() -> None:
    """The shell's executor tells a copy's gate what it would tell a call never hedged."""
    clock = Clock()
    e = engine(clock)
    h = race(e)
    first = CopyGate(h, 0)  # the race before its first copy
    assert h.start() == Launch(1, None)
    clock.now = 0.05
    wire_id = launched_id(h.hedge())
    hedge = CopyGate(h, 2)
    assert hedge.headed(Head(503)) == Read(e.max_event_bytes)
    assert hedge.received(b"") is None  # failed, transiently: the first copy races on
    one = CopyGate(h, 1)
    assert one.failed(ConnectionResetError("reset"), ErrorKind.READ, "reset") == Sleep(0.2)
    retry = first.slept()  # every copy failed: the retry is copy 3
    assert type(retry) is Launch and retry.number == 3
    assert launched_id(retry) not in (7, wire_id)


def test_a_hedge_s_gate_gives_the_budget_s_answer_to_the_hedge() -> None:
    clock = Clock()
    budget = Shared()
    h = race(engine(clock, budget=budget))
    h.start()
    clock.now = 0.05
    assert h.hedge() == Ask(budget=budget)
    launch = HedgeGate(h).answered(True)
    assert type(launch) is Launch and launch.number == 2
