"""Whether an answer says the server no longer knows the MCP session (core/session_lost.py):
every way it is reported, and what is no lost session."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_safe_retry import classify
from mcp_safe_retry.core.session_lost import session_lost
from mcp_safe_retry.records import Classification

TEXT = [{"type": "text", "text": "hi"}]


def result(id: Any = 1, **fields: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id, "result": fields}).encode()


def error(id: Any = 1, code: Any = -32602, message: Any = "bad") -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}
    ).encode()


SESSION_LOST = [
    pytest.param(
        classify(404, error(code=-32600, message="Session not found")),
        False,
        True,
        id="python-server-404-session-not-found",
    ),
    pytest.param(classify(404, b"", content_type=None), True, True, id="bare-404-after-a-session"),
    pytest.param(classify(404, b"", content_type=None), False, False, id="bare-404-no-session"),
    pytest.param(
        classify(200, error(code=32600, message="Session terminated")),
        False,
        True,
        id="mcp1-local-plus-32600-session-terminated",
    ),
    pytest.param(
        classify(200, error(code=-32600, message="Session terminated")),
        False,
        True,
        id="minus-32600-session-terminated",
    ),
    pytest.param(
        classify(200, error(code=-32600, message="Invalid Request")),
        True,
        False,
        id="plain-invalid-request",
    ),
    pytest.param(
        classify(200, error(code=32600, message="something else")),
        False,
        False,
        id="plus-32600-without-session-words",
    ),
    pytest.param(
        classify(400, error(code=-32000, message="Bad Request: No valid session ID")),
        True,
        False,
        id="typescript-400-is-no-expiry",
    ),
    pytest.param(
        classify(200, result(content=TEXT)), True, False, id="a-success-is-never-a-lost-session"
    ),
]


@pytest.mark.parametrize(("classification", "sent_session", "lost"), SESSION_LOST)
def test_session_lost_recognises_every_way_it_is_reported(
    classification: Classification, sent_session: bool, lost: bool
) -> None:
    assert session_lost(classification, sent_session=sent_session) is lost


def test_a_404_method_not_found_is_never_a_lost_session() -> None:
    """2026-07-28 answers -32601 with 404, and that revision has no sessions."""
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}}
    )
    found = classify(404, body)
    assert found.code == -32601
    assert not session_lost(found, sent_session=True)
    assert session_lost(classify(404, b""), sent_session=True)  # a bare 404 still is
