"""The observer protocol (core/hooks.py): what counts as a hook, and which hooks a call
tells (``CallContext.listeners``): none while only a switched-off hook is there."""

from __future__ import annotations

from mcp_safe_retry.core.attempt_kinds import AttemptKind
from mcp_safe_retry.core.hooks import Hook, SwitchedHook
from mcp_safe_retry.core.outcomes import Outcome, verdict
from mcp_safe_retry.core.records import RetryOrigin, Seen
from tests.core.drive import engine

SEEN = Seen(
    1,
    RetryOrigin.NONE,
    1,
    verdict(Outcome.RPC_SUCCESS),
    None,
    None,
    0.0,
    None,
    None,
    0.0,
    1.0,
    AttemptKind.POST,
)


class Ear:
    def on_attempt(self, record: object, attempt: object) -> None: ...

    def on_call(self, record: object) -> None: ...


class Deaf:
    def on_call(self, record: object) -> None: ...


class Switch(Ear):
    def __init__(self, on: bool, *, says: bool = True) -> None:
        self.on = on
        self.says = says
        self.asked: list[Seen] = []

    def enabled(self) -> bool:
        return self.on

    def wants(self, attempt: Seen) -> bool:
        self.asked.append(attempt)
        return self.says


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


def test_a_switched_on_hook_with_nothing_to_say_of_an_attempt_is_told_nothing() -> None:
    quiet = Switch(True, says=False)
    assert engine(logging_hook=quiet).listeners(SEEN) == ()
    assert quiet.asked == [SEEN]
    assert engine(logging_hook=quiet).listeners() == (quiet,)  # no attempt: as switched
    talkative = Switch(True)
    assert engine(logging_hook=talkative).listeners(SEEN) == (talkative,)


def test_a_switched_hook_is_asked_what_it_wants_only_while_on_and_alone() -> None:
    off = Switch(False, says=False)
    assert engine(logging_hook=off).listeners(SEEN) == ()
    quiet, ear = Switch(True, says=False), Ear()
    # A user's hook is told everything; the switched hook, told too, decides for itself.
    assert engine(logging_hook=quiet, hooks=[ear]).listeners(SEEN) == (quiet, ear)
    assert off.asked == quiet.asked == []
