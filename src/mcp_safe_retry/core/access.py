"""Reading the record a transport attached to a response, or to the exception that ended
a call."""

from __future__ import annotations

from typing import Any, Protocol

from .extensions import RECORD_ATTRIBUTE, RECORD_EXTENSION
from .ledger import RecordRef
from .records import CallRecord

__all__ = ["get_record"]


class _HasExtensions(Protocol):
    @property
    def extensions(self) -> Any: ...


def get_record(response: _HasExtensions | BaseException) -> CallRecord | None:
    """The call record of a response that came through a retry transport (httpx or httpx2),
    or of the transport exception that ended a call once its retries were spent.

    For an SSE answer this is the newest snapshot: ``complete`` turns True once the stream
    has been read to its end or closed.
    """
    ref = getattr(response, RECORD_ATTRIBUTE, None)
    if ref is None and not isinstance(response, BaseException):
        ref = getattr(response, "extensions", {}).get(RECORD_EXTENSION)
    return ref.current if isinstance(ref, RecordRef) else None
