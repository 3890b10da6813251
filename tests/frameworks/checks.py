"""The checks every framework test makes (issue 20): the same kitchen run, the same verdicts.

A run of ``SCENARIO``/``PARAMS`` answers the first `tools/call` POST (`lookup`) with 503 and its
retry with 200, the next (`charge`) with 503, and any later one (a re-send) with 200; other
requests are answered normally.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import anyio

from mcp_safe_retry import History
from mcp_safe_retry.records import Outcome, Reason, RetryOrigin
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


# The duplicate guard (issue 18): a framework's re-call of an UNSAFE call that may have run.
ABORT_AFTER = (
    "connection_abort",
    {"when": "after", "tool": "charge"},
)  # charge runs, then the drop


def duplicate_held() -> Any:
    """`Outcome.DUPLICATE_HELD`, or a clear failure while the guard is not merged in."""
    held = getattr(Outcome, "DUPLICATE_HELD", None)
    if held is None:
        raise AssertionError(
            "waits on the duplicate guard (issue 18, branch i18-guard): "
            "mcp_safe_retry.Outcome has no DUPLICATE_HELD"
        )
    return held


def assert_recall_held(kitchen: Kitchen, history: History) -> None:
    """The framework called `charge` again after the drop; the guard held it: it ran once."""
    runs = kitchen.state()["executionsByKey"].get("charge", {})
    assert runs == {CHARGE["key"]: 1}, (
        f"the tool ran {runs}: the framework's re-call was sent "
        "(the duplicate guard and the process's call ledger hold it)"
    )
    assert kitchen.posts("charge") == 1
    first, again = calls(history, "charge")
    assert first.classification.outcome is Outcome.NETWORK_ERROR
    assert again.classification.outcome is duplicate_held()
    assert again.post_count == 0
    assert [a.retry_origin for a in again.attempts] == [RetryOrigin.APPLICATION]


async def raised(call: Awaitable[Any]) -> BaseException | None:
    """The exception `call` raised, or None if it returned."""
    try:
        await call
    except Exception as exc:
        return exc
    return None


def contained_outcome(error: BaseException | None) -> str | None:
    """The `data.outcome` of the contained JSON-RPC error (-32010) in `error`'s chain, if any."""
    seen: BaseException | None = error
    for _ in range(20):  # a bounded walk down __cause__ / __context__
        if seen is None:
            return None
        data = getattr(getattr(seen, "error", None), "data", None)
        if isinstance(data, dict) and data.get("source") == "mcp-safe-retry":
            outcome = data.get("outcome")
            return str(outcome) if outcome is not None else None
        seen = seen.__cause__ or seen.__context__
    return None


async def settled(kitchen: Kitchen, tool: str, key: str, *, after: float) -> None:
    """Wait (at most ``after`` seconds) until ``tool`` ran for ``key``: a slow call the
    client stopped waiting for still runs on the server, later."""
    with anyio.move_on_after(after):
        while not kitchen.state()["executionsByKey"].get(tool, {}).get(key):
            await anyio.sleep(0.05)
    # A retry sent after a client timeout would run that much later: long enough to count it.
    await anyio.sleep(1.5)
