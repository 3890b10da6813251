"""How a lost MCP session is recognised in a classification: a 404 to a request that carried
the session, or an error whose code and words name a lost session."""

from __future__ import annotations

from .outcomes import Classification, Outcome

__all__ = ["METHOD_NOT_FOUND", "SESSION_LOST_CODES", "session_lost"]

SESSION_LOST_CODES = frozenset({-32600, 32600})
"""Codes a lost session is reported with: -32600 by servers (with HTTP 404), and +32600 by
``mcp`` 1.x, whose client turns a 404 into a local "Session terminated" error with the minus
sign missing."""
_SESSION_LOST_WORDS = ("session terminated", "session not found", "session expired")
METHOD_NOT_FOUND = -32601
"""JSON-RPC's "method not found": a 2026-07-28 server answers it with 404 (that revision has
no sessions), so a 404 that carries it is never a lost session."""


def session_lost(classification: Classification, *, sent_session: bool = False) -> bool:
    """True if ``classification`` says the server no longer knows the MCP session.

    A 404 to a request that carried ``Mcp-Session-Id`` (``sent_session``) is how the spec
    says it (2025 era): the server did not process the request, and a new session must be
    started with ``initialize``. An error that names a lost session is recognised whatever
    carried it: the Python SDK server's 404 "Session not found" (-32600) and ``mcp`` 1.x's
    own "Session terminated" with code +32600. A 404 whose body says -32601 (method not
    found) never is.
    """
    if classification.outcome not in (Outcome.HTTP_ERROR, Outcome.JSONRPC_ERROR):
        return False
    if classification.code == METHOD_NOT_FOUND:
        return False
    if sent_session and classification.status == 404:
        return True
    if classification.code not in SESSION_LOST_CODES or not classification.message:
        return False
    text = classification.message.lower()
    return any(words in text for words in _SESSION_LOST_WORDS)
