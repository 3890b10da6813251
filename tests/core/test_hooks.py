"""The observer protocol (core/hooks.py): what counts as a hook, and which hooks a call
tells (``CallContext.listeners``): none while only a switched-off hook is there."""

from __future__ import annotations

from mcp_safe_retry.core.hooks import Hook, SwitchedHook
from tests.core.drive import engine


class Ear:
    def on_attempt(self, record: object, attempt: object) -> None: ...

    def on_call(self, record: object) -> None: ...


class Deaf:
    def on_call(self, record: object) -> None: ...


class Switch(Ear):
    def __init__(self, on: bool) -> None:
        self.on = on

    def enabled(self) -> bool:
        return self.on


def test_a_hook_is_anything_told_of_attempts_and_calls() -> None:
    assert isinstance(Ear(), Hook)
    assert not isinstance(Deaf(), Hook)


def test_a_switched_off_hook_alone_is_told_nothing() -> None:
    off: SwitchedHook = Switch(False)
    assert engine(logging_hook=off).listeners() == ()
    on = Switch(True)
    assert engine(logging_hook=on).listeners() == (on,)


def test_a_user_s_hooks_are_told_after_the_switched_hook_whatever_its_switch() -> None:
    off, ear = Switch(False), Ear()
    assert engine(logging_hook=off, hooks=[ear]).listeners() == (off, ear)
    assert engine(hooks=[ear]).listeners() == (ear,)
