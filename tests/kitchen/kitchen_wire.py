"""Helpers for the kitchen tests: raw Streamable HTTP requests (plain httpx, no MCP SDK)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

from mcp_safe_retry.kitchen import KitchenServer

StartKitchen = Callable[..., KitchenServer]
"""The `start_kitchen` fixture: `KitchenServer` arguments in, a started kitchen out."""

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ACCEPT = "application/json, text/event-stream"
_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    """Headers a 2026-07-28 client sends with one request."""
    headers = {
        "accept": ACCEPT,
        "content-type": "application/json",
        "mcp-protocol-version": MODERN,
        "mcp-method": method,
    }
    if name is not None:
        headers["mcp-name"] = name
    return headers


def modern_body(
    request_id: int | str, method: str, params: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A 2026-07-28 request body: params carry the required `_meta` envelope."""
    meta = dict(_META)
    params = dict(params or {})
    meta.update(params.pop("_meta", {}))
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**params, "_meta": meta},
    }


def call_tool(
    client: httpx.Client,
    url: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    request_id: int | str = 1,
    progress_token: int | str | None = None,
) -> httpx.Response:
    """POST one 2026-07-28 `tools/call` and return the whole response."""
    params: dict[str, Any] = {"name": tool, "arguments": arguments}
    if progress_token is not None:
        params["_meta"] = {"progressToken": progress_token}
    body = modern_body(request_id, "tools/call", params)
    return client.post(url, json=body, headers=modern_headers("tools/call", tool))


def legacy_headers(session_id: str | None) -> dict[str, str]:
    """Headers of a 2025-11-25 request after the handshake."""
    headers = {"accept": ACCEPT, "content-type": "application/json", "mcp-protocol-version": LEGACY}
    if session_id is not None:
        headers["mcp-session-id"] = session_id
    return headers


def legacy_handshake(client: httpx.Client, url: str) -> str | None:
    """Run initialize + notifications/initialized; return the session id (None if stateless)."""
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "kitchen-tests", "version": "0"},
        },
    }
    response = client.post(url, json=init, headers={"accept": ACCEPT})
    response.raise_for_status()
    session_id: str | None = response.headers.get("mcp-session-id")
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    client.post(url, json=note, headers=legacy_headers(session_id)).raise_for_status()
    return session_id


def legacy_call_tool(
    client: httpx.Client,
    url: str,
    session_id: str | None,
    tool: str,
    arguments: dict[str, Any],
    *,
    request_id: int = 1,
) -> httpx.Response:
    """POST one 2025-11-25 `tools/call` within a session."""
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    return client.post(url, json=body, headers=legacy_headers(session_id))


def sse_messages(text: str) -> list[dict[str, Any]]:
    """Return the JSON data of every SSE event in a complete stream."""
    messages = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].strip() for line in block.split("\n") if line.startswith("data:")]
        if data and data[0]:
            messages.append(json.loads("\n".join(data)))
    return messages


def answer(response: httpx.Response) -> dict[str, Any]:
    """Return the JSON-RPC response of a JSON or SSE answer."""
    if response.headers["content-type"].startswith("text/event-stream"):
        found = [m for m in sse_messages(response.text) if "result" in m or "error" in m]
        assert len(found) == 1, response.text
        return found[0]
    result: dict[str, Any] = response.json()
    return result
