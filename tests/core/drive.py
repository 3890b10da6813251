"""Driving the core without I/O: an engine with a clock and randomness fixed, the requests
and answers of a tool call, and what a ``Send`` carries (shared by tests/core)."""

from __future__ import annotations

import json

from mcp_safe_retry import Idempotency, RetryPolicy
from mcp_safe_retry.core.call import Call
from mcp_safe_retry.core.call import begin as begin_call
from mcp_safe_retry.core.commands import Send
from mcp_safe_retry.core.engine import Engine
from mcp_safe_retry.core.events import Head
from mcp_safe_retry.core.session import Handshake

POLICY = RetryPolicy(tools={"lookup": Idempotency.READ}, jitter="none")
JSON = Head(200, "application/json")
SSE = Head(200, "text/event-stream")
URL = "http://127.0.0.1:1/mcp"
REQUEST = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "lookup"}}
WALL_CLOCK = 1_790_000_000.0  # Unix time, fixed
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


class Clock:
    """The engine's clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def engine(clock: Clock | None = None, **options: object) -> Engine:
    """An engine whose clock stands still (or is ``clock``) and whose jitter is none."""
    options.setdefault("policy", POLICY)
    options.setdefault("wall_clock", lambda: WALL_CLOCK)
    options.setdefault("id_prefix", "0a1b2c3d")
    return Engine(rand=lambda: 0.5, clock=clock or (lambda: 0.0), **options)  # type: ignore[arg-type]


def request(tool: str = "lookup", request_id: int = 7) -> bytes:
    """A ``tools/call`` of ``tool`` under ``request_id``."""
    return json.dumps({**REQUEST, "id": request_id, "params": {"name": tool}}).encode()


def begin(e: Engine, tool: str = "lookup", request_id: int = 7) -> Call:
    """The call of a ``tools/call`` POSTed to ``URL``."""
    call = begin_call(e, request(tool, request_id), {"content-type": "application/json"}, {}, URL)
    assert call is not None
    return call


def answer(request_id: object) -> bytes:
    """A tool's success, answering ``request_id``."""
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"content": []}}).encode()


def handed_on(request_id: object = 7) -> bytes:
    """``answer`` as the call hands it on after restoring the caller's id (compact JSON)."""
    return json.dumps(json.loads(answer(request_id)), separators=(",", ":")).encode()


def sent_message(command: object) -> dict[str, object]:
    """The JSON-RPC message a ``Send`` carries (its content, not the caller's body)."""
    assert type(command) is Send and command.content is not None
    message = json.loads(command.content)
    assert isinstance(message, dict)
    return message


def opened_session(e: Engine, session: str = "s-1") -> None:
    """Tell the engine ``session`` was opened by INITIALIZE, as a shell does when the
    client's own initialize is answered."""
    e.sessions.opened(session, Handshake(INITIALIZE, "2025-11-25"))


def initialized(request_id: object, version: str = "2025-11-25") -> bytes:
    """The server's answer to an ``initialize``."""
    result = {"protocolVersion": version, "capabilities": {}, "serverInfo": {"name": "s"}}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()
