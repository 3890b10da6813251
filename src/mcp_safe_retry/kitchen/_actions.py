"""What a scenario decides to do with one POST: plain values the fault layer carries out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

MalformedKind = Literal[
    "invalid_json",
    "wrong_id",
    "missing_jsonrpc",
    "result_and_error",
    "wrong_content_type",
    "empty_body",
]
MALFORMED_KINDS: tuple[MalformedKind, ...] = (
    "invalid_json",
    "wrong_id",
    "missing_jsonrpc",
    "result_and_error",
    "wrong_content_type",
    "empty_body",
)

AbortMode = Literal["close", "reset", "partial"]
ABORT_MODES: tuple[AbortMode, ...] = ("close", "reset", "partial")


@attrs.frozen
class Pass:
    """Hand the request to the real server, optionally after a delay."""

    delay_s: float = 0.0

    @property
    def fault(self) -> str | None:
        """The label recorded for this POST."""
        return "delay" if self.delay_s > 0 else None


@attrs.frozen
class Reply:
    """Answer with exactly this status, headers and body; the real server never sees it."""

    status: int
    fault: str
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""


@attrs.frozen
class Respond:
    """Answer HTTP 200 with this JSON-RPC message, framed the way the real server frames."""

    message: Mapping[str, Any]
    fault: str


@attrs.frozen
class Truncate:
    """Open an SSE stream, send `events` notifications, end it before any response.

    Attributes:
        events: Notifications sent before the stream ends.
        after_tool: Run the real request first (the tool executes) and discard its answer.
        abrupt: Drop the connection instead of ending the chunked body cleanly.
    """

    events: int
    after_tool: bool
    abrupt: bool
    fault: str = "sse_truncated"


@attrs.frozen
class Abort:
    """Drop the connection without a complete response.

    Attributes:
        after_tool: Run the real request first (the tool executes) and discard its answer.
        mode: "close" (FIN, no bytes), "reset" (RST, no bytes) or "partial" (status line,
            headers with a Content-Length and part of the body, then FIN).
    """

    after_tool: bool
    mode: AbortMode
    fault: str = "connection_abort"


@attrs.frozen
class Mangle:
    """Run the real request (the tool executes), then corrupt its answer in one way."""

    kind: MalformedKind

    @property
    def fault(self) -> str:
        """The label recorded for this POST."""
        return f"malformed:{self.kind}"


@attrs.frozen
class DropSession:
    """Hand the request to the real server, then end its session there.

    Once the answer is out, the kitchen terminates the session inside the real server
    (as a server that expires idle sessions does), so every later request carrying its
    `Mcp-Session-Id` gets the server's own 404 "Session not found".
    """

    fault: str = "session_dropped"


@attrs.frozen
class Late:
    """Hand the request to the real server after `delay_s`, unless the client leaves first.

    A client that closes its connection during the delay (a hedged copy that lost, a caller
    that gave up) is never served: the tool does not run and the POST is recorded with the
    label `<fault>:abandoned` and no status.
    """

    delay_s: float
    fault: str


Action = Pass | Reply | Respond | Truncate | Abort | Mangle | DropSession | Late
