"""What a call asks its shell to do (core/commands.py): small frozen values, compared by
value, every one of them a member of ``Command``."""

from __future__ import annotations

import typing

import pytest

from mcp_safe_retry.core import commands
from mcp_safe_retry.core.attempt_kinds import AttemptKind
from mcp_safe_retry.core.commands import (
    END_STREAM,
    HAND_ON,
    LOCK,
    Command,
    EndStream,
    HandOn,
    Lock,
    Send,
    Sleep,
)


def test_every_command_named_by_the_module_is_a_call_s_or_the_race_s() -> None:
    named = {getattr(commands, name) for name in commands.__all__}
    kinds = {value for value in named if isinstance(value, type) and issubclass(value, tuple)}
    race = {commands.Launch, commands.Loser, commands.Turn}  # a hedged call's (core/hedging.py)
    assert set(typing.get_args(Command)) == kinds - race
    assert named - kinds == {
        Command,
        commands.HeaderEdits,
        commands.CANCEL_EDITS,
        commands.CANCEL_TIME_LIMIT,
    }


def test_commands_are_values() -> None:
    assert Send(None) == Send(None, AttemptKind.POST, ())
    assert Send(b"x", AttemptKind.POST, (("mcp-session-id", "s"),)) != Send(b"x")
    assert Sleep(0.2) == Sleep(0.2) and hash(Sleep(0.2)) == hash(Sleep(0.2))
    assert (HandOn(None), EndStream(b""), Lock()) == (HAND_ON, END_STREAM, LOCK)
    with pytest.raises(AttributeError):
        Sleep(0.2).seconds = 1.0  # type: ignore[misc]
