"""The checks every framework test makes (issue 20): the same kitchen run, the same verdicts.

A run of ``SCENARIO``/``PARAMS`` answers the first `tools/call` POST (`lookup`) with 503 and its
retry with 200, the next (`charge`) with 503, and any later one (a re-send) with 200; other
requests are answered normally.
"""

from __future__ import annotations

from typing import Any

from mcp_safe_retry import History, Outcome, Reason, RetryOrigin
from tests.kitchen_process import Kitchen

SCENARIO = "errors.http_status_sequence"
PARAMS = {"statusCodes": [503, 200, 503, 200], "method": "tools/call"}
LOOKUP = {"key": "a"}
CHARGE = {"key": "c", "amount": 1}
TIMEOUT = 30.0  # a framework that hangs on the UNSAFE call fails here, not after minutes


def calls(history: History, tool: str) -> list[Any]:
    """The records of `tools/call` for `tool`, oldest first."""
    return [r for r in history.records() if r.method == "tools/call" and r.tool == tool]


def assert_read_retried_once_run(kitchen: Kitchen, history: History) -> None:
    """READ `lookup` met a 503, was retried by the transport, and ran once."""
    (lookup,) = calls(history, "lookup")
    assert lookup.http_statuses == (503, 200)
    assert [a.retry_origin for a in lookup.attempts] == [RetryOrigin.NONE, RetryOrigin.SDK]
    assert lookup.classification.outcome is Outcome.TOOL_SUCCESS
    assert kitchen.state()["executionsByKey"]["lookup"] == {LOOKUP["key"]: 1}


def assert_unsafe_sent_once_never_run(kitchen: Kitchen, history: History) -> None:
    """UNSAFE `charge` met a 503: one POST, not retried, never run; the record says why."""
    (charge,) = calls(history, "charge")
    assert charge.http_statuses == (503,)
    assert charge.attempts[0].decision.reason is Reason.NOT_IDEMPOTENT
    assert charge.classification.outcome is Outcome.HTTP_ERROR
    assert kitchen.posts("charge") == 1
    assert "charge" not in kitchen.state()["executions"]
