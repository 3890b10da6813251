"""What the shells take from httpx beyond its transport API: the exceptions raised for an
oversized body and for a request held back unsent (by the circuit breaker, or by the
duplicate guard), the kind of every transport failure, the MCP SDKs' timeouts, the
environment's proxies as the library reads them, and what the MCP SDK of this library needs
of containment.

``scripts/unasync.py`` makes the httpx2 twin (``generated/errors_httpx2.py``) from this file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
from httpx._utils import get_environment_proxies

from ..core import errors
from ..core.attempt_kinds import ErrorKind
from ..core.commands import Break, Raise, Refuse
from ..core.outcomes import Outcome
from ..instrumentation.redact import scrub

if TYPE_CHECKING:
    from ..core.call import Call

__all__ = [
    "CONTAIN_HTTP_ERRORS",
    "MCP_TIMEOUT",
    "BodyTooLarge",
    "CircuitOpenError",
    "DuplicateCallError",
    "describe_error",
    "environment_proxies",
    "failure",
    "refusal",
    "too_large",
]

MCP_TIMEOUT = httpx.Timeout(30.0, read=300.0)  # the MCP SDKs' defaults: a stream may idle

CONTAIN_HTTP_ERRORS = True
"""Whether ``contain_failures`` contains a final HTTP error too. The MCP SDK on httpx (mcp
1.x) calls ``raise_for_status()`` and ends its session on any non-2xx answer to a POST, so
the httpx shells answer it as a JSON-RPC error for that request; mcp 2.x (httpx2) turns it
into one by itself, so the httpx2 shells hand it on (``scripts/unasync.py`` makes this False
there)."""


def environment_proxies() -> dict[str, str | None]:
    """The proxy routes the HTTP library reads from ``HTTP_PROXY``, ``HTTPS_PROXY``,
    ``ALL_PROXY`` and ``NO_PROXY`` for a client with ``trust_env=True``: URL pattern -> proxy
    URL (None: no proxy). Read by the library's own function (httpx and httpx2 differ on
    ``NO_PROXY``), so a client of ours routes as the library's own clients do."""
    return get_environment_proxies()


class BodyTooLarge(httpx.ReadError, errors.BodyTooLarge):
    """A JSON body larger than the transport's ``max_event_bytes``: not read, not retried
    (``mcp_safe_retry.BodyTooLarge`` catches it, whatever the HTTP library)."""


def too_large(limit: int) -> BodyTooLarge:
    """The error for a body past ``limit`` bytes, not read (a hostile endless body)."""
    return BodyTooLarge(f"response body larger than {limit} bytes")


class CircuitOpenError(httpx.TransportError, errors.CircuitOpenError):
    """The circuit breaker held the request back: nothing was sent (see
    ``mcp_safe_retry.CircuitOpenError``, which catches it, whatever the HTTP library)."""


class DuplicateCallError(httpx.TransportError, errors.DuplicateCallError):
    """The duplicate guard held the call back: nothing was sent (see
    ``mcp_safe_retry.DuplicateCallError``, which catches it, whatever the HTTP library)."""


_REFUSALS: dict[Outcome, type[httpx.TransportError]] = {
    Outcome.CIRCUIT_OPEN: CircuitOpenError,
    Outcome.DUPLICATE_HELD: DuplicateCallError,
    Outcome.DUPLICATE_IN_FLIGHT: DuplicateCallError,
}


def refusal(command: Refuse, request: httpx.Request) -> httpx.TransportError:
    """The exception that ends a call refused unsent (a ``Refuse`` command)."""
    return _REFUSALS[command.outcome](command.message, request=request)


def failure(call: Call, request: httpx.Request, command: object) -> BaseException:
    """The exception that ends ``call`` for a command that fails it (``Raise``, ``Refuse``,
    ``Break``: the one way a shell fails a call), the record attached."""
    if type(command) is Raise:
        return command.error  # annotated by the call already
    if type(command) is Refuse:
        return call.annotated(refusal(command, request))
    if type(command) is Break:
        return call.annotated(httpx.RemoteProtocolError(command.message))
    return AssertionError(f"no answer: {command!r}")


# The first class in an exception's MRO found here names its kind.
_KINDS: dict[type[BaseException], ErrorKind] = {
    httpx.ConnectError: ErrorKind.CONNECT,
    httpx.ConnectTimeout: ErrorKind.CONNECT,
    httpx.PoolTimeout: ErrorKind.POOL,
    httpx.ReadTimeout: ErrorKind.TIMEOUT,
    httpx.WriteTimeout: ErrorKind.TIMEOUT,
    httpx.TimeoutException: ErrorKind.TIMEOUT,
    BodyTooLarge: ErrorKind.OVERSIZED,
    httpx.ReadError: ErrorKind.READ,
    httpx.WriteError: ErrorKind.WRITE,
    httpx.CloseError: ErrorKind.READ,
    httpx.RemoteProtocolError: ErrorKind.PROTOCOL,
    httpx.LocalProtocolError: ErrorKind.LOCAL,
    httpx.UnsupportedProtocol: ErrorKind.LOCAL,
    httpx.ProxyError: ErrorKind.LOCAL,
    httpx.NetworkError: ErrorKind.NETWORK,
    httpx.DecodingError: ErrorKind.DECODING,
}


def describe_error(exc: BaseException) -> tuple[ErrorKind, str]:
    """``(kind, detail)`` for an httpx exception; the detail is scrubbed of credentials."""
    kind = ErrorKind.NETWORK
    for cls in type(exc).__mro__:
        found = _KINDS.get(cls)
        if found is not None:
            kind = found
            break
    return kind, scrub(f"{type(exc).__name__}: {exc}")[:200]
