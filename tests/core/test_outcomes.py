"""The outcome vocabulary (core/outcomes.py): every outcome in its layer, what counts as a
success and as no failure, and a classification's dict."""

from __future__ import annotations

import pytest

from mcp_safe_retry.core.outcomes import (
    LAYER_OF,
    NOT_FAILURES,
    SUCCESSES,
    Classification,
    Layer,
    Outcome,
    verdict,
)


def test_every_outcome_has_a_layer() -> None:
    assert set(LAYER_OF) == set(Outcome)
    assert LAYER_OF[Outcome.NETWORK_ERROR] is Layer.TRANSPORT
    assert LAYER_OF[Outcome.JSONRPC_ERROR] is Layer.PROTOCOL


@pytest.mark.parametrize("outcome", list(Outcome))
def test_a_verdict_is_in_its_outcome_s_layer(outcome: Outcome) -> None:
    made = verdict(outcome, detail="x")
    assert made == Classification(LAYER_OF[outcome], outcome, detail="x")
    assert made.ok is (outcome in SUCCESSES)


def test_successes_are_no_failures_and_so_are_a_redirect_and_a_request_for_input() -> None:
    assert {Outcome.TOOL_SUCCESS, Outcome.RPC_SUCCESS, Outcome.ACCEPTED} == SUCCESSES
    assert {
        Outcome.INPUT_REQUIRED,
        Outcome.REDIRECT,
        Outcome.TASK_CREATED,  # the server runs the call as a task: not finished, not failed
        Outcome.TASK_WORKING,
    } == NOT_FAILURES - SUCCESSES


def test_the_dict_holds_layer_outcome_status_and_code_only() -> None:
    c = verdict(Outcome.HTTP_ERROR, status=503, code=-32603, message="m", detail="d")
    assert c.as_dict() == {
        "layer": "transport",
        "outcome": "HTTP_ERROR",
        "status": 503,
        "code": -32603,
    }
    assert verdict(Outcome.TOOL_SUCCESS).as_dict() == {
        "layer": "application",
        "outcome": "TOOL_SUCCESS",
    }
