"""Which server a request is for: the one key per-server state (circuits, latencies, the
duplicate guard's memory) uses."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

__all__ = ["ServerKey", "server_key"]

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


class ServerKey:
    """The key of the server ``url`` is for, worked out the first time it is read, then kept
    (``str(key)``): a call the duplicate guard watches needs it only once the guard has
    something to look up or remember, and most calls are answered first. Writing an HTTP
    library's URL out (``str(url)``) is the larger part of the cost.

    Args:
        url: the request's URL (an HTTP library's, or a string).
        keys: the key of a URL string (``CallContext.server_key``: remembered per transport).
    """

    __slots__ = ("_key", "_keys", "_url")

    def __init__(self, url: object, keys: Callable[[str], str]) -> None:
        self._url = url
        self._keys = keys
        self._key: str | None = None

    def __str__(self) -> str:
        key = self._key
        if key is None:
            key = self._key = self._keys(str(self._url))
            self._url = None
        return key

    def __repr__(self) -> str:
        return f"ServerKey({str(self)!r})"
