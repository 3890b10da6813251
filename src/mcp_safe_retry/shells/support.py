"""Small pure helpers the generated shells share (they work for httpx and httpx2 alike)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..core.classify import media_type

__all__ = ["header_values", "is_jsonrpc_post", "strip_headers"]

REQUEST_HEADERS = {
    name: name.decode()
    for name in (b"content-type", b"mcp-session-id", b"mcp-protocol-version", b"last-event-id")
}
RESPONSE_HEADERS = {
    name: name.decode()
    for name in (b"content-type", b"retry-after", b"mcp-session-id", b"content-encoding")
}


def header_values(raw: Iterable[tuple[bytes, bytes]], names: Mapping[bytes, str]) -> dict[str, str]:
    """The named headers, read in one pass over the raw list.

    ``names`` maps each lower-case raw name to the name it is found under. One pass costs
    less than a lookup per name in an httpx ``Headers``, which scans the whole list each
    time; the first of repeated headers wins, as ``Headers.get`` would join them and none
    of these may be repeated.
    """
    found: dict[str, str] = {}
    for key, value in raw:
        name = names.get(key.lower())
        if name is not None and name not in found:
            found[name] = value.decode("latin-1")
    return found


def is_jsonrpc_post(method: str, content_type: str | None) -> bool:
    """Only JSON POSTs can carry a JSON-RPC message; everything else passes through."""
    return method == "POST" and media_type(content_type)[0] == "application/json"


def strip_headers(raw: Iterable[tuple[bytes, bytes]], *names: bytes) -> list[tuple[bytes, bytes]]:
    """Raw header pairs without the named ones (names in lower case)."""
    return [(k, val) for k, val in raw if k.lower() not in names]
