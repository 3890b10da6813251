"""A hedged call's copies (core/hedge_copies.py): how each answer bears on the call, for every
outcome."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_safe_retry import RetryPolicy
from mcp_safe_retry.core.hedge_copies import Ending, ending_of
from mcp_safe_retry.core.outcomes import verdict
from mcp_safe_retry.records import Outcome

HEDGED = RetryPolicy(hedge_after=0.1, max_hedges=1, max_retries=2)


def _classified(outcome: Outcome, **kw: Any) -> Any:
    return verdict(outcome, **kw)


ENDINGS = [
    pytest.param(_classified(Outcome.TOOL_SUCCESS), Ending.SUCCESS, id="tool-success"),
    pytest.param(_classified(Outcome.RPC_SUCCESS), Ending.SUCCESS, id="rpc-success"),
    pytest.param(_classified(Outcome.ACCEPTED), Ending.SUCCESS, id="accepted"),
    pytest.param(_classified(Outcome.INPUT_REQUIRED), Ending.SUCCESS, id="input-required"),
    pytest.param(_classified(Outcome.TOOL_ERROR), Ending.FINAL, id="tool-error"),
    pytest.param(_classified(Outcome.JSONRPC_ERROR, code=-32602), Ending.FINAL, id="rpc-error"),
    pytest.param(_classified(Outcome.MALFORMED_JSON), Ending.FINAL, id="malformed"),
    pytest.param(_classified(Outcome.INVALID_ENVELOPE), Ending.FINAL, id="bad-envelope"),
    pytest.param(_classified(Outcome.INVALID_TOOL_RESULT), Ending.FINAL, id="bad-result"),
    pytest.param(_classified(Outcome.HTTP_ERROR, status=503), Ending.TRANSIENT, id="http-503"),
    pytest.param(_classified(Outcome.HTTP_ERROR, status=400), Ending.FINAL, id="http-400"),
    pytest.param(
        _classified(Outcome.NETWORK_ERROR, error_kind="read"), Ending.TRANSIENT, id="net-read"
    ),
    pytest.param(
        _classified(Outcome.NETWORK_ERROR, error_kind="local"), Ending.FINAL, id="net-local"
    ),
    pytest.param(_classified(Outcome.STREAM_INCOMPLETE), Ending.TRANSIENT, id="stream-cut"),
    pytest.param(_classified(Outcome.CIRCUIT_OPEN), Ending.FINAL, id="circuit-open"),
    pytest.param(_classified(Outcome.DUPLICATE_HELD), Ending.FINAL, id="duplicate-held"),
    pytest.param(_classified(Outcome.DUPLICATE_IN_FLIGHT), Ending.FINAL, id="duplicate-in-flight"),
    pytest.param(_classified(Outcome.REDIRECT, status=307), Ending.SUCCESS, id="redirect"),
    pytest.param(_classified(Outcome.TASK_CREATED), Ending.SUCCESS, id="task-created"),
    pytest.param(_classified(Outcome.TASK_WORKING), Ending.SUCCESS, id="task-working"),
    pytest.param(_classified(Outcome.TASK_CANCELLED), Ending.FINAL, id="task-cancelled"),
]


@pytest.mark.parametrize(("classification", "expected"), ENDINGS)
def test_ending_of(classification: Any, expected: Ending) -> None:
    assert ending_of(HEDGED, classification) is expected


def test_every_outcome_has_an_ending_case() -> None:
    covered = {case.values[0].outcome for case in ENDINGS}  # type: ignore[attr-defined]
    assert covered == set(Outcome)
    assert {case.values[1] for case in ENDINGS} == set(Ending)  # type: ignore[attr-defined]
