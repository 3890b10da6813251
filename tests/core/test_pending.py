"""A retry waiting for a shared budget, as a value (core/pending.py): what the call keeps
while the shell asks, and what follows each answer, driven through the call's events."""

from __future__ import annotations

from mcp_safe_retry import RetryBudget
from mcp_safe_retry.core.attempt_kinds import ErrorKind
from mcp_safe_retry.core.commands import Ask, Raise, Sleep
from mcp_safe_retry.core.events import Head
from mcp_safe_retry.records import Decision, Outcome, Reason
from tests.core.drive import begin, engine


class Shared(RetryBudget):
    """A budget that says it does not answer inline: asked through the shell."""

    answers_inline = False


def test_a_503_waiting_for_the_budget_is_kept_as_a_value_until_it_answers() -> None:
    budget = Shared()
    call = begin(engine(budget=budget))
    call.start()
    head = Head(503, "text/plain")
    call.headed(head)
    assert call.received(b"busy") == Ask(budget=budget)
    assert call.settling.planned  # kept as a value while the shell asks
    assert call.answered(True) == Sleep(0.2)
    assert not call.settling.planned  # settled once
    [attempt] = call.ref.current.attempts
    assert attempt.classification.outcome is Outcome.HTTP_ERROR and attempt.status == 503
    assert attempt.decision is not None and attempt.decision.retry


def test_a_failure_waiting_for_the_budget_ends_the_call_on_a_no() -> None:
    budget = Shared()
    call = begin(engine(budget=budget))
    call.start()
    error = ConnectionResetError("reset")
    assert call.failed(error, ErrorKind.READ, "reset") == Ask(budget=budget)
    assert call.settling.planned
    assert call.answered(False) == Raise(error)  # the failure, as it came
    [attempt] = call.ref.current.attempts
    assert attempt.decision == Decision.stop(Reason.THROTTLED)
