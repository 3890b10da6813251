"""Cancelling a hedged call's losers (core/hedge_cancel.py): closing or notifying, by protocol
version and session, and the ``notifications/cancelled`` body."""

from __future__ import annotations

import json

import pytest

from mcp_safe_retry.core.hedge_cancel import HEDGE_CANCEL_REASON, CancelBy, cancel_by, cancellation


@pytest.mark.parametrize(
    ("version", "session", "expected"),
    [
        pytest.param("2026-07-28", None, CancelBy.CLOSE, id="2026-closing-is-cancelling"),
        pytest.param("2026-07-28", "s", CancelBy.CLOSE, id="2026-never-notifies"),
        pytest.param("2025-11-25", "s", CancelBy.NOTIFY, id="2025-session"),
        pytest.param("2025-06-18", None, CancelBy.CLOSE, id="2025-stateless"),
        pytest.param(None, "s", CancelBy.NOTIFY, id="no-version-header-is-2025"),
        pytest.param("2099-01-01", "s", CancelBy.CLOSE, id="newer-than-we-know"),
    ],
)
def test_cancel_by(version: str | None, session: str | None, expected: CancelBy) -> None:
    assert cancel_by(version, session) is expected


@pytest.mark.parametrize("wire_id", [pytest.param(3, id="int"), pytest.param("h-1", id="str")])
def test_cancellation_body(wire_id: int | str) -> None:
    body = cancellation(wire_id)
    assert json.loads(body) == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": wire_id, "reason": HEDGE_CANCEL_REASON},
    }
    assert b" " not in body.replace(b"hedged request lost", b"")
