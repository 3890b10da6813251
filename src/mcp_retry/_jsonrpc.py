"""JSON-RPC request facts (method, id, tool, arguments) and id rewriting, all pure."""

from __future__ import annotations

import hashlib
import json
from typing import Any, TypeAlias

import attrs

__all__ = [
    "RequestFacts",
    "RequestId",
    "dumps",
    "loads",
    "parse_request",
    "same_id",
    "with_id",
]

RequestId: TypeAlias = str | int
JSON: TypeAlias = Any

_MAX_DEPTH_ERRORS = (ValueError, RecursionError, TypeError)


def loads(data: bytes | str) -> JSON:
    """Parse JSON; raises ValueError for anything that is not one JSON text."""
    try:
        return json.loads(data)
    except _MAX_DEPTH_ERRORS as exc:  # RecursionError on absurd nesting, too
        raise ValueError(str(exc)) from None


def dumps(value: JSON) -> bytes:
    """Serialise compactly as UTF-8, the way MCP SDKs send messages."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def is_request_id(value: object) -> bool:
    """JSON-RPC ids we track: strings and integers (``true`` is not ``1``)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def same_id(a: object, b: object) -> bool:
    """Compare ids by JSON value: ``1`` and ``"1"`` differ, and so do ``1`` and ``true``."""
    return is_request_id(a) and type(a) is type(b) and a == b


@attrs.frozen
class RequestFacts:
    """What the transport needs to know about one JSON-RPC message sent by the client."""

    method: str
    id: RequestId | None  # None: a notification
    tool: str | None = None  # params.name of a tools/call
    digest: str = ""  # stable hash of method, tool and arguments (never the arguments)
    message: dict[str, JSON] = attrs.field(factory=dict, eq=False, repr=False)

    @property
    def is_notification(self) -> bool:
        return self.id is None


def parse_request(body: bytes) -> RequestFacts | None:
    """Read one client-to-server JSON-RPC request or notification.

    Returns None for anything else (batches, responses to server requests, non-JSON), which
    the transport then passes through untouched.
    """
    try:
        message = loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    method = message.get("method")
    if not isinstance(method, str):
        return None
    if "id" in message:
        request_id = message["id"]
        if not is_request_id(request_id):
            return None
    else:
        request_id = None
    params = message.get("params")
    tool = None
    if method == "tools/call" and isinstance(params, dict):
        name = params.get("name")
        tool = name if isinstance(name, str) else None
    return RequestFacts(
        method=method, id=request_id, tool=tool, digest=_digest(method, params), message=message
    )


def _digest(method: str, params: object) -> str:
    """Hash what makes two requests "the same call", leaving out per-request metadata."""
    if isinstance(params, dict):
        params = {k: v for k, v in params.items() if k != "_meta"}
    try:
        canonical = json.dumps([method, params], sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        canonical = method
    return hashlib.blake2b(canonical.encode(), digest_size=12).hexdigest()


def with_id(message: dict[str, JSON], new_id: RequestId) -> bytes:
    """The same message with another id, serialised."""
    return dumps({**message, "id": new_id})
