"""Which server a request is for: the one key per-server state (circuits, latencies, the
duplicate guard's memory) uses."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple
from urllib.parse import urlsplit

__all__ = ["ServerKey", "for_caller", "key_of", "server_key"]

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


class _Where(NamedTuple):
    url: object  # the request's URL (an HTTP library's, or a string)
    keys: Callable[[str], str]  # the key of a URL string


class ServerKey(_Where):
    """The key of the server ``url`` is for, worked out the first time it is read, then kept
    (``str(key)``): a call the duplicate guard watches needs it only once the guard has
    something to look up or remember, and most calls are answered first. Writing an HTTP
    library's URL out (``str(url)``) is the larger part of the cost.

    A tuple (one is made per guarded call: ``key_of`` builds it in C), the key kept beside
    it once worked out.

    Args:
        url: the request's URL (an HTTP library's, or a string).
        keys: the key of a URL string (``CallContext.server_key``: remembered per transport).
    """

    _key: str | None = None

    def __str__(self) -> str:
        key = self._key
        if key is None:
            key = self._key = self.keys(str(self.url))
        return key

    def __repr__(self) -> str:
        return f"ServerKey({str(self)!r})"

    # Equal only to itself, as the object it stands for (never compared as a tuple).
    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__


key_of: Callable[[tuple[object, Callable[[str], str]]], ServerKey] = functools.partial(
    tuple.__new__, ServerKey
)
"""``ServerKey(url, keys)`` from ``(url, keys)``, built in C (no named tuple's ``__new__``)."""


def for_caller(keys: Callable[[str], str], caller: str) -> Callable[[str], str]:
    """The key of a URL for one caller of a transport that sends for many (a gateway's
    clients, named by ``extensions.CALLER_EXTENSION``): the server's key, then the caller,
    so each caller's calls are remembered apart."""
    return lambda url: f"{keys(url)} caller={caller}"
