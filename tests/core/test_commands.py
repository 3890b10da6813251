"""What a call asks its shell to do (core/commands.py): small frozen values, compared by
value, every one of them a member of ``Command``."""

from __future__ import annotations

import typing

import pytest

from mcp_safe_retry.core import commands
from mcp_safe_retry.core.attempt_kinds import AttemptKind
from mcp_safe_retry.core.commands import (
    HAND_ON,
    LOCK,
    Answer,
    Command,
    Lock,
    Send,
    Sleep,
    contain,
)


def test_every_command_named_by_the_module_is_a_call_s_or_the_race_s() -> None:
    named = {getattr(commands, name) for name in commands.__all__}
    kinds = {value for value in named if isinstance(value, type) and issubclass(value, tuple)}
    race = {commands.Launch, commands.Loser}  # a hedged call's (core/hedging.py)
    assert set(typing.get_args(Command)) == kinds - race
    assert named - kinds == {
        Command,
        commands.Next,
        commands.HeaderEdits,
        commands.CANCEL_EDITS,
        commands.CANCEL_TIME_LIMIT,
        commands.contain,
    }


def test_commands_are_values() -> None:
    assert Send(None) == Send(None, AttemptKind.POST, ())
    assert Send(b"x", AttemptKind.POST, (("mcp-session-id", "s"),)) != Send(b"x")
    assert Sleep(0.2) == Sleep(0.2) and hash(Sleep(0.2)) == hash(Sleep(0.2))
    assert (Answer(None), Lock()) == (HAND_ON, LOCK)
    # One way to answer: the server's response (as read, or its body replaced), or one made
    # here (a contained failure, an answer kept); in an SSE answer handed on, its end.
    assert contain(b"{}") == Answer(b"{}", 200, "application/json")
    with pytest.raises(AttributeError):
        Sleep(0.2).seconds = 1.0  # type: ignore[misc]
