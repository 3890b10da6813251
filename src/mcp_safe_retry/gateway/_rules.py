"""What the gateway lets through, and how it rewrites what points at its upstream.

Plain functions over values (headers as lists of byte pairs, URLs as strings): which headers
cross the gateway in each direction, the digest that names a client, and where a redirect or
a legacy ``endpoint`` event sends the client. The retry decisions are not here: they are
the transport's, made for the gateway's requests exactly as for any other.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Sequence
from urllib.parse import urljoin, urlsplit

__all__ = [
    "HOP_BY_HOP",
    "TOKEN_HEADER",
    "Origin",
    "caller_digest",
    "forwarded_request_headers",
    "forwarded_response_headers",
    "pointed_back",
    "token_matches",
]

Headers = list[tuple[bytes, bytes]]

HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)
"""Headers of one connection, never forwarded (RFC 9110 7.6.1), with those a ``Connection``
header names."""

TOKEN_HEADER = "X-MCP-Gateway-Token"
"""The header a client proves itself to the gateway with (``--client-token``). Not
``Authorization``: that one belongs to the upstream and is passed on."""

# Set by the HTTP library from the request it sends, or the gateway's own.
_REQUEST_OWN = frozenset({b"host", b"content-length", TOKEN_HEADER.lower().encode()})
_RESPONSE_OWN = frozenset({b"content-length", b"date", b"server"})

_CALLER_DOMAIN = b"mcp-safe-retry gateway caller\x00"


def _connection_named(headers: Sequence[tuple[bytes, bytes]]) -> set[bytes]:
    """The headers a ``Connection`` header names as hop-by-hop too."""
    named: set[bytes] = set()
    for name, value in headers:
        if name.lower() == b"connection":
            named.update(part.strip().lower() for part in value.split(b","))
    return named


def forwarded_request_headers(
    headers: Sequence[tuple[bytes, bytes]], upstream_token: str | None
) -> Headers:
    """The client's headers as the upstream gets them: hop-by-hop ones, ``Host``, the length
    and the gateway's token dropped; ``Authorization`` replaced by the gateway's own when it
    has one (``upstream_token``); everything else (``Mcp-*``, ``MCP-Protocol-Version``,
    ``Last-Event-ID``, ``Accept``, ...) as the client sent it."""
    dropped = HOP_BY_HOP | _REQUEST_OWN | _connection_named(headers)
    if upstream_token is not None:
        dropped = dropped | {b"authorization"}
    kept = [(name, value) for name, value in headers if name.lower() not in dropped]
    if upstream_token is not None:
        kept.append((b"authorization", b"Bearer " + upstream_token.encode()))
    return kept


def forwarded_response_headers(headers: Iterable[tuple[bytes, bytes]]) -> Headers:
    """The upstream's answer headers as the client gets them: hop-by-hop ones dropped, and
    those the gateway's server writes itself (``Date``, ``Server``); ``Content-Length`` is
    set by the caller from the body it sends."""
    pairs = list(headers)
    dropped = HOP_BY_HOP | _RESPONSE_OWN | _connection_named(pairs)
    return [(name, value) for name, value in pairs if name.lower() not in dropped]


def caller_digest(token: str | None, authorization: str | None) -> str | None:
    """The name of a client in the duplicate guard: a digest of the credentials it presents
    (the gateway's token, its own ``Authorization``), never the credentials; None for a
    client that presents none. Unsalted, so every gateway of a fleet names a client alike."""
    if token is None and authorization is None:
        return None
    material = f"{token or ''}\x00{authorization or ''}".encode()
    return hashlib.sha256(_CALLER_DOMAIN + material).hexdigest()[:32]


def token_matches(presented: str | None, tokens: Sequence[bytes]) -> bool:
    """Whether ``presented`` is one of ``tokens``, compared in constant time (each token is
    compared, whichever matches)."""
    if presented is None:
        return False
    given = presented.encode()
    found = False
    for token in tokens:
        found |= hmac.compare_digest(given, token)
    return found


class Origin:
    """The upstream's origin (scheme, host, port), and whether a URL is of it.

    Args:
        url: the upstream's URL.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.key = _origin(url)

    def owns(self, url: str) -> bool:
        """Whether ``url`` (absolute) is of the upstream's origin."""
        return _origin(url) == self.key


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = -1  # an invalid port is of no origin
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme)


def pointed_back(origin: Origin, base: str, location: str) -> str | None:
    """Where the client is sent when the upstream points it at ``location`` (a redirect's
    ``Location``, a legacy ``endpoint`` event), resolved against ``base`` (the URL the
    upstream answered): the same path and query on the gateway, written relative to the
    gateway's origin; None when ``location`` is of another origin (refused)."""
    target = urljoin(base, location.strip())
    if not origin.owns(target):
        return None
    parts = urlsplit(target)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
