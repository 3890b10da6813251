"""What the network told a call, as the shells hand it in: the parts of a response head the
call reads (``Head``), and whether such an answer is streamed on as it flows (``streams``).

The call machine (``call.Call``) and its parts (the books, session renewal, the hedging
driver) all read these; they live here, below all of them, so none imports another for them.
"""

from __future__ import annotations

from typing import NamedTuple

from .headers import media_type
from .jsonrpc import RequestFacts

__all__ = ["Head", "streams"]


class Head(NamedTuple):
    """The parts of a response head the call reads (a tuple: one is made per response)."""

    status: int
    content_type: str | None = None
    retry_after: str | None = None
    session_id: str | None = None
    encoded: bool = False  # a Content-Encoding: the body read is decoded, not as sent
    sized: bool = False  # a Content-Length, which an SSE answer handed on may not keep


def streams(head: Head, facts: RequestFacts) -> bool:
    """Whether this answer is an SSE stream handed on as it flows (else it is read whole)."""
    return (  # the media type first: a JSON answer is read whole whatever the rest says
        media_type(head.content_type)[0] == "text/event-stream"
        and head.status // 100 == 2
        and facts.id is not None  # not a notification
    )
