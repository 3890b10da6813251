"""Facts the fault layer reads from one incoming HTTP request, before deciding on a fault."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import attrs
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from mcp_safe_retry.kitchen._book import JsonId

SESSION_HEADER = "mcp-session-id"
PROTOCOL_VERSION_HEADER = "mcp-protocol-version"


@attrs.frozen
class RequestFacts:
    """What one request to the MCP endpoint says about itself.

    Attributes:
        http_method: "POST", "GET", "DELETE", ...
        method: JSON-RPC method, None when the body is not one JSON-RPC message.
        request_id: The JSON-RPC id as sent (None for notifications).
        is_request: True when the body carries an `id` member, so a response is owed.
        tool: `params.name` of a `tools/call`.
        progress_token: `params._meta.progressToken`, if the caller asked for progress.
        key: The `key` argument of a `tools/call` (the kitchen's tools take one), so the
            POSTs of one logical call can be told apart from another's.
        cancelled_id: `params.requestId` of a `notifications/cancelled`: the request it
            cancels.
        session_id: `Mcp-Session-Id` header.
        protocol_version: `MCP-Protocol-Version` header.
    """

    http_method: str
    method: str | None = None
    request_id: JsonId = None
    is_request: bool = False
    tool: str | None = None
    progress_token: int | str | None = None
    key: str | None = None
    cancelled_id: JsonId = None
    session_id: str | None = None
    protocol_version: str | None = None

    @property
    def is_modern(self) -> bool:
        """Whether the SDK routes this request to its 2026-07-28 (sessionless) entry.

        Mirrors the SDK's header-only routing: any version header outside the
        handshake-era list goes to the modern entry.
        """
        version = self.protocol_version
        return version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS


def read_facts(
    http_method: str, headers: Iterable[tuple[bytes, bytes]], body: bytes
) -> RequestFacts:
    """Read the facts of one request from its headers and (for POST) its body.

    A body that is not a single JSON-RPC object yields facts with `method=None`: the
    real server still gets to reject it, the kitchen just cannot target it.
    """
    header_map = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in headers}
    base = RequestFacts(
        http_method=http_method,
        session_id=header_map.get(SESSION_HEADER),
        protocol_version=header_map.get(PROTOCOL_VERSION_HEADER),
    )
    try:
        message: Any = json.loads(body) if body else None
    except (ValueError, RecursionError):
        return base
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return base
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    raw_id = message.get("id")
    name = params.get("name")
    meta = params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    arguments = params.get("arguments")
    key = arguments.get("key") if isinstance(arguments, dict) else None
    cancelled = params.get("requestId") if message["method"] == "notifications/cancelled" else None
    return attrs.evolve(
        base,
        method=message["method"],
        request_id=raw_id if isinstance(raw_id, int | str) else None,
        is_request="id" in message,
        tool=name if message["method"] == "tools/call" and isinstance(name, str) else None,
        progress_token=token if isinstance(token, int | str) else None,
        key=key if message["method"] == "tools/call" and isinstance(key, str) else None,
        cancelled_id=cancelled if isinstance(cancelled, int | str) else None,
    )
