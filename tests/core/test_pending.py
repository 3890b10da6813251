"""A retry waiting for a shared budget, as a value (core/pending.py): what the call keeps
while the shell asks, and what follows each answer, driven through the call's events."""

from __future__ import annotations

from mcp_safe_retry import RetryBudget
from mcp_safe_retry.core.attempt_kinds import ErrorKind
from mcp_safe_retry.core.commands import Consult, Raise, Sleep
from mcp_safe_retry.core.events import Head
from mcp_safe_retry.core.pending import AfterFailure, AfterRead, PendingRetry, Settle
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
    assert call.received(b"busy") == Consult(budget)
    planned = call._planned
    assert type(planned) is PendingRetry
    assert type(planned.settle) is Settle and planned.settle.head == head
    assert planned.settle.classification.outcome is Outcome.HTTP_ERROR
    assert type(planned.then) is AfterRead and planned.then.body == b"busy"
    assert call.consulted(True) == Sleep(0.2)
    assert call._planned is None  # settled once


def test_a_failure_waiting_for_the_budget_ends_the_call_on_a_no() -> None:
    budget = Shared()
    call = begin(engine(budget=budget))
    call.start()
    error = ConnectionResetError("reset")
    assert call.failed(error, ErrorKind.READ, "reset") == Consult(budget)
    planned = call._planned
    assert planned is not None and planned.then == AfterFailure(error, ErrorKind.READ, False)
    assert call.consulted(False) == Raise(error)  # the failure, as it came
    [attempt] = call.ref.current.attempts
    assert attempt.decision == Decision.stop(Reason.THROTTLED)
