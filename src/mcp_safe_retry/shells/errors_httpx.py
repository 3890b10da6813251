"""What the shells take from httpx beyond its transport API: the exceptions raised for an
oversized body and for a request held back unsent (by the circuit breaker, or by the
duplicate guard), the kind of every transport failure, and the MCP SDKs' timeouts.

``scripts/unasync.py`` makes the httpx2 twin (``generated/errors_httpx2.py``) from this file.
"""

from __future__ import annotations

import httpx

from ..core.classify import Outcome
from ..core.commands import Refuse
from ..core.kinds import ErrorKind
from ..instrumentation.redact import scrub

__all__ = [
    "MCP_TIMEOUT",
    "BodyTooLarge",
    "CircuitOpenError",
    "DuplicateCallError",
    "describe_error",
    "refusal",
]

MCP_TIMEOUT = httpx.Timeout(30.0, read=300.0)  # the MCP SDKs' defaults: a stream may idle


class BodyTooLarge(httpx.ReadError):
    """A JSON body larger than the transport's ``max_event_bytes``: not read, not retried."""


class CircuitOpenError(httpx.TransportError):
    """The circuit breaker held the request back: nothing was sent. ``get_record(exc)``
    holds the call's record (its last attempt: ``Outcome.CIRCUIT_OPEN``)."""


class DuplicateCallError(httpx.TransportError):
    """The duplicate guard held the call back: nothing was sent, because the same UNSAFE
    call (same server, tool and arguments) was sent earlier and got no answer, so it may
    have run. The message names that call (its time, its delivery state, how it ended);
    ``get_record(exc)`` holds this call's record (``Outcome.DUPLICATE_HELD``, and
    ``duplicate_of``). Send it anyway inside ``allow_duplicate()``."""


_REFUSALS: dict[Outcome, type[httpx.TransportError]] = {
    Outcome.CIRCUIT_OPEN: CircuitOpenError,
    Outcome.DUPLICATE_HELD: DuplicateCallError,
}


def refusal(command: Refuse, request: httpx.Request) -> httpx.TransportError:
    """The exception that ends a call refused unsent (a ``Refuse`` command)."""
    return _REFUSALS[command.outcome](command.message, request=request)


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
