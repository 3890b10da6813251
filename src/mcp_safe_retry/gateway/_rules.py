"""What the gateway lets in and what crosses it: the requests it refuses (``Admission``),
the headers that cross in each direction, the digest that names a client.

Plain values and functions (headers as lists of byte pairs). The retry decisions are not
here: they are the transport's, made for the gateway's requests exactly as for any other.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Sequence

__all__ = [
    "HOP_BY_HOP",
    "TOKEN_HEADER",
    "Admission",
    "Refused",
    "caller_digest",
    "caller_of",
    "forwarded_request_headers",
    "forwarded_response_headers",
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

# Set by the HTTP library from the request it sends, or the gateway's own (it has read the
# body already: an ``Expect: 100-continue`` was answered on the client's connection).
_REQUEST_OWN = frozenset({b"host", b"content-length", b"expect", TOKEN_HEADER.lower().encode()})
_RESPONSE_OWN = frozenset({b"content-length", b"date", b"server"})

_CALLER_DOMAIN = b"mcp-safe-retry gateway caller\x00"
_TOKEN_KEY = TOKEN_HEADER.lower()


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


def caller_of(headers: dict[str, str]) -> str | None:
    """The name of the client that sent ``headers`` (by lower-case name): ``caller_digest``
    of its credentials."""
    return caller_digest(headers.get(_TOKEN_KEY), headers.get("authorization"))


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


class Refused(Exception):
    """A request the gateway answers itself, with ``status`` and the message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Admission:
    """Who may send the gateway a request: an origin-form target, a ``Host`` it serves (a
    DNS-rebinding page names its own), no browser page of another origin, and, when the
    gateway has client tokens, one of them (every path but ``exempt``).

    Raises:
        ValueError: an empty token (an empty header would match it).

    Args:
        hosts: the ``Host`` values served (``host:port`` or ``host``); None: any.
        origins: the ``Origin`` values served besides those of ``hosts``.
        tokens: the client tokens (none: no token asked).
        exempt: a path served without a token (the health check).
    """

    def __init__(
        self,
        hosts: Iterable[str] | None,
        origins: Iterable[str],
        tokens: Sequence[str],
        exempt: str,
    ) -> None:
        if any(not token for token in tokens):
            raise ValueError("a client token must not be empty")
        self._hosts = None if hosts is None else {h.lower() for h in hosts}
        self._origins = {o.lower().rstrip("/") for o in origins}
        self._tokens = [token.encode() for token in tokens]
        self._exempt = exempt

    def check(self, path: str, headers: dict[str, str]) -> None:
        """Refuse what the gateway never forwards (``headers`` by lower-case name).

        Raises:
            Refused: 400 for an absolute-form target, 421 for another host, 403 for
                another origin, 401 for a missing or wrong token.
        """
        if not path.startswith("/"):  # "POST http://elsewhere/ HTTP/1.1", or "*"
            raise Refused(400, "absolute-form request targets are refused: this gateway "
                          "forwards only to its upstream")  # fmt: skip
        host = headers.get("host", "").lower()
        if self._hosts is not None and host not in self._hosts:
            raise Refused(421, f"this gateway does not serve the host {host!r}")
        origin = headers.get("origin")
        if origin is not None and not self._allows(origin):
            raise Refused(403, f"requests from the origin {origin!r} are refused")
        needs_token = self._tokens and path != self._exempt
        if needs_token and not token_matches(headers.get(_TOKEN_KEY), self._tokens):
            raise Refused(401, f"this gateway needs its client token ({TOKEN_HEADER})")

    def _allows(self, origin: str) -> bool:
        origin = origin.lower().rstrip("/")
        if origin in self._origins:
            return True
        return self._hosts is not None and origin.partition("://")[2] in self._hosts
