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


def test_every_command_named_by_the_module_is_a_command() -> None:
    named = {getattr(commands, name) for name in commands.__all__}
    members = set(typing.get_args(Command))
    assert members == named - {Command, commands.HeaderEdits}


def test_commands_are_values() -> None:
    assert Send(None) == Send(None, AttemptKind.POST, ())
    assert Send(b"x", AttemptKind.POST, (("mcp-session-id", "s"),)) != Send(b"x")
    assert Sleep(0.2) == Sleep(0.2) and hash(Sleep(0.2)) == hash(Sleep(0.2))
    assert (HandOn(None), EndStream(b""), Lock()) == (HAND_ON, END_STREAM, LOCK)
    with pytest.raises(AttributeError):
        Sleep(0.2).seconds = 1.0  # type: ignore[misc]
