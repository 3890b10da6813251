"""Which server a request is for: the one key per-server state (circuits, latencies) uses."""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["server_key"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def server_key(url: str) -> str:
    """The server a URL names: scheme, host, port and path; no user, query or fragment, and
    no default port (``"https://Example.com:443/mcp?x=1"`` -> ``"https://example.com/mcp"``)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"  # IPv6
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    return f"{scheme}://{netloc}{parts.path or '/'}"
