"""Idempotency: whether a request may be sent again after the server may have seen it, and the
rule that says so for a method and tool (protocol reads are safe; a tool is UNSAFE unless the
policy or, when trusted, its ``readOnlyHint`` says otherwise)."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from enum import StrEnum

__all__ = ["READ_METHODS", "Idempotency", "idempotency_of"]

READ_METHODS = frozenset(
    {
        "ping",
        "initialize",
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "server/discover",
    }
)
"""Protocol methods that change nothing on the server, so re-sending them is safe."""


class Idempotency(StrEnum):
    """Whether a call may be sent again after the server may have seen it."""

    READ = "read"
    UNSAFE = "unsafe"


def idempotency_of(
    method: str,
    tool: str | None,
    *,
    tools: Mapping[str, Idempotency],
    trust_annotations: bool,
    read_only_tools: frozenset[str] = frozenset(),
) -> Idempotency:
    """How safe it is to re-send a request (notifications are never re-sent).

    Args:
        method: the JSON-RPC method.
        tool: the tool a ``tools/call`` names (None: none named).
        tools: tool name or fnmatch pattern -> Idempotency (an exact name first).
        trust_annotations: count tools in ``read_only_tools`` as READ.
        read_only_tools: tools whose ``readOnlyHint`` is true.
    """
    if method != "tools/call":
        return Idempotency.READ if method in READ_METHODS else Idempotency.UNSAFE
    if tool is None:
        return Idempotency.UNSAFE
    if tool in tools:
        return tools[tool]
    for pattern, idempotency in tools.items():
        if fnmatch.fnmatchcase(tool, pattern):
            return idempotency
    if trust_annotations and tool in read_only_tools:
        return Idempotency.READ
    return Idempotency.UNSAFE
