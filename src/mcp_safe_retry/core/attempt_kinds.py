"""The closed vocabularies of an attempt: how it was sent, and how its network error is known."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["HEALABLE_NEVER", "UNSENT", "AttemptKind", "ErrorKind"]


class AttemptKind(StrEnum):
    """How an attempt reached the server."""

    POST = "post"  # the call's POST (the first, or a re-send)
    RESUME = "resume"  # the client's GET with Last-Event-ID, resuming a broken stream
    HEDGE = "hedge"  # a POST sent while an earlier copy of the call was still unanswered
    # The client's initialize replayed (then notifications/initialized) to open a new
    # session after the server answered 404 for the old one: not a POST of the call.
    REINITIALISE = "reinitialise"
    HELD = "held"  # not sent: the circuit breaker held it back


class ErrorKind(StrEnum):
    """What kind of failure stood in for a response (``Attempt.error_kind``)."""

    CONNECT = "connect"  # no connection could be made
    POOL = "pool"  # no connection came free in the pool
    TIMEOUT = "timeout"
    READ = "read"
    WRITE = "write"
    PROTOCOL = "protocol"  # the server broke HTTP
    NETWORK = "network"  # any other transport error
    LOCAL = "local"  # a bad URL, a proxy refusal, our own protocol error
    OVERSIZED = "oversized"  # a body past max_event_bytes, not read
    DECODING = "decoding"  # a Content-Encoding that did not decode
    INTERNAL = "internal"  # an exception of the inner transport's own
    CANCELLED = "cancelled"  # the caller cancelled the call


UNSENT = frozenset({ErrorKind.CONNECT, ErrorKind.POOL})
"""Kinds raised before a single byte of the request was written."""

HEALABLE_NEVER = frozenset({ErrorKind.LOCAL, ErrorKind.OVERSIZED, ErrorKind.DECODING})
"""Kinds no retry can heal."""
