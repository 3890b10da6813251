"""Small pure helpers the generated shells share (they work for httpx and httpx2 alike)."""

from __future__ import annotations

from collections.abc import Iterable

from ._redact import scrub

__all__ = ["describe_error", "is_jsonrpc_post", "strip_headers"]

# By class name, so one table serves httpx and httpx2; the first name in the MRO wins.
_KINDS = {
    "ConnectError": "connect",
    "ConnectTimeout": "connect",
    "PoolTimeout": "pool",
    "ReadTimeout": "timeout",
    "WriteTimeout": "timeout",
    "TimeoutException": "timeout",
    "ReadError": "read",
    "WriteError": "write",
    "CloseError": "read",
    "RemoteProtocolError": "protocol",
    "LocalProtocolError": "local",
    "UnsupportedProtocol": "local",
    "ProxyError": "local",
    "NetworkError": "network",
    "BodyTooLarge": "oversized",
    "DecodingError": "decoding",
}


def describe_error(exc: BaseException) -> tuple[str, str]:
    """``(kind, detail)`` for a transport exception; the detail is scrubbed of credentials.

    Kinds: connect, pool, timeout, read, write, protocol, network; and local, oversized or
    decoding,
    which no retry can heal.
    """
    kind = "network"
    for cls in type(exc).__mro__:
        if cls.__name__ in _KINDS:
            kind = _KINDS[cls.__name__]
            break
    return kind, scrub(f"{type(exc).__name__}: {exc}")[:200]


def is_jsonrpc_post(method: str, content_type: str | None) -> bool:
    """Only JSON POSTs can carry a JSON-RPC message; everything else passes through."""
    if method != "POST" or content_type is None:
        return False
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


def strip_headers(raw: Iterable[tuple[bytes, bytes]], *names: bytes) -> list[tuple[bytes, bytes]]:
    """Raw header pairs without the named ones (names in lower case)."""
    return [(k, val) for k, val in raw if k.lower() not in names]
