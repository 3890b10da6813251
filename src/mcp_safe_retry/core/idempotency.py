"""Idempotency: whether a request may be sent again after the server may have seen it, and the
rule that says so for a method and tool (protocol reads are safe, and so are the Tasks
extension's acknowledgements; a tool is UNSAFE unless the policy or, when trusted, its
``readOnlyHint`` or ``idempotentHint`` says otherwise)."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from enum import StrEnum

__all__ = ["IDEMPOTENT_METHODS", "READ_METHODS", "RETRIED", "Idempotency", "idempotency_of"]

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
        # The Tasks extension (SEP-2663): "a pure, idempotent read that any layer can cache
        # or replay safely", whatever tool created the task.
        "tasks/get",
    }
)
"""Protocol methods that change nothing on the server, so re-sending them is safe."""

IDEMPOTENT_METHODS = frozenset({"tasks/cancel", "tasks/update"})
"""Protocol methods that may change something, but once only: the Tasks extension's
acknowledgements. A second ``tasks/cancel`` asks for what the first asked; a second
``tasks/update`` carries input keys the server already has, which it ignores ("already
satisfied input keys are ignored"). So they are re-sent after a transport failure, like a
read, but never hedged."""


class Idempotency(StrEnum):
    """Whether a call may be sent again after the server may have seen it."""

    READ = "read"
    # Changes something, but a repeat adds nothing (an upsert, a set_status, ``idempotentHint``):
    # re-sent after a transport failure like READ, never hedged, never held by the guard.
    IDEMPOTENT = "idempotent"
    UNSAFE = "unsafe"


RETRIED = frozenset({Idempotency.READ, Idempotency.IDEMPOTENT})
"""What is re-sent after a transport failure (``decision.decide``); only READ is hedged."""


def idempotency_of(
    method: str,
    tool: str | None,
    *,
    tools: Mapping[str, Idempotency],
    trust_annotations: bool,
    read_only_tools: frozenset[str] = frozenset(),
    idempotent_tools: frozenset[str] = frozenset(),
) -> Idempotency:
    """How safe it is to re-send a request (notifications are never re-sent).

    Args:
        method: the JSON-RPC method.
        tool: the tool a ``tools/call`` names (None: none named).
        tools: tool name or fnmatch pattern -> Idempotency (an exact name first).
        trust_annotations: count tools in ``read_only_tools`` as READ, and those in
            ``idempotent_tools`` as IDEMPOTENT.
        read_only_tools: tools whose ``readOnlyHint`` is true.
        idempotent_tools: tools whose ``idempotentHint`` is true and ``readOnlyHint`` is not.
    """
    if method != "tools/call":
        if method in READ_METHODS:
            return Idempotency.READ
        return Idempotency.IDEMPOTENT if method in IDEMPOTENT_METHODS else Idempotency.UNSAFE
    if tool is None:
        return Idempotency.UNSAFE
    if tool in tools:
        return tools[tool]
    for pattern, idempotency in tools.items():
        if fnmatch.fnmatchcase(tool, pattern):
            return idempotency
    if trust_annotations:
        if tool in read_only_tools:
            return Idempotency.READ
        if tool in idempotent_tools:
            return Idempotency.IDEMPOTENT
    return Idempotency.UNSAFE
