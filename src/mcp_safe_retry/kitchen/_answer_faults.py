"""Scenarios that answer in the server's place: an HTTP status sequence, a JSON-RPC error, a
tool error result, a 429 with ``Retry-After`` (the tool does not run)."""

from __future__ import annotations

import email.utils
import json
from typing import Any, ClassVar, Literal

import attrs

from mcp_safe_retry.kitchen._actions import Action, Pass, Reply, Respond
from mcp_safe_retry.kitchen._facts import RequestFacts
from mcp_safe_retry.kitchen._params import Match, Params
from mcp_safe_retry.kitchen._scenario_base import JSON_HEADERS, RunCounters, jsonrpc_error

__all__ = ["HttpStatusSequence", "JsonRpcErrorScenario", "RateLimit", "ToolErrorScenario"]


@attrs.frozen
class HttpStatusSequence:
    """Answer the run's POSTs with `statusCodes` in order, the last one repeating.

    With `method` and/or `tool`, only the POSTs they select count and are answered from
    the sequence (a client's handshake, which differs between clients and eras, then
    passes untouched); without them every POST counts, as in the Cakewalk kitchen.
    """

    name: ClassVar[str] = "errors.http_status_sequence"
    status_codes: tuple[int, ...]
    match: Match

    @classmethod
    def read(cls, p: Params) -> HttpStatusSequence:
        """Read `statusCodes` (200..599) and the optional `method` / `tool` filter."""
        codes = p.integers("statusCodes", minimum=200, maximum=599)
        return cls(codes, Match(methods=p.methods(None), tool=p.optional_string("tool")))

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Every (selected) POST counts, initialize and notifications too; a 2xx passes."""
        filtered = self.match.methods is not None or self.match.tool is not None
        if filtered and not self.match.selects(facts):
            return Pass()
        if filtered:
            run.matched += 1
        number = run.matched if filtered else run.posts
        code = self.status_codes[min(number, len(self.status_codes)) - 1]
        if 200 <= code < 300:
            return Pass()
        return Reply(code, "http_status")


@attrs.frozen
class JsonRpcErrorScenario:
    """HTTP 200 with a JSON-RPC error instead of the result; the tool does not run."""

    name: ClassVar[str] = "errors.jsonrpc_error"
    code: int
    message: str
    data: Any
    match: Match

    @classmethod
    def read(cls, p: Params) -> JsonRpcErrorScenario:
        """Read `code`, `message`, `data` and the match filter (default: first tools/call)."""
        return cls(
            p.integer("code", -32603),
            p.string("message", "Internal error"),
            p.raw("data"),
            p.match(requests_only=True),
        )

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Answer the hit POST with the configured error."""
        if run.hit(self.match, facts):
            error = jsonrpc_error(facts.request_id, self.code, self.message, self.data)
            return Respond(error, "jsonrpc_error")
        return Pass()


@attrs.frozen
class ToolErrorScenario:
    """HTTP 200 with a `CallToolResult` whose `isError` is true; the tool does not run."""

    name: ClassVar[str] = "errors.tool_error"
    error_message: str
    match: Match

    @classmethod
    def read(cls, p: Params) -> ToolErrorScenario:
        """Read `errorMessage`, `tool`, `onInvocation` and `times` (tools/call only)."""
        message = p.string("errorMessage", "Tool failed (injected by the kitchen)")
        return cls(message, p.match(default_method="tools/call", requests_only=True))

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Answer the hit tools/call with a tool-level error result."""
        if facts.method == "tools/call" and run.hit(self.match, facts):
            result: dict[str, Any] = {
                "content": [{"type": "text", "text": self.error_message}],
                "isError": True,
            }
            if facts.is_modern:
                # 2026-07-28 servers MUST send resultType; older ones never do.
                result["resultType"] = "complete"
            return Respond(
                {"jsonrpc": "2.0", "id": facts.request_id, "result": result}, "tool_error"
            )
        return Pass()


@attrs.frozen
class RateLimit:
    """429 Too Many Requests with `Retry-After`, optionally with a JSON-RPC error body."""

    name: ClassVar[str] = "rate_limit"
    retry_after: int | None
    retry_after_format: Literal["seconds", "http-date"]
    body: Literal["empty", "jsonrpc"]
    error_code: int
    error_message: str
    null_result: bool
    match: Match

    @classmethod
    def read(cls, p: Params) -> RateLimit:
        """Read the Retry-After value and format, the body shape and the match filter."""
        return cls(
            retry_after=p.nullable_integer("retryAfter", 1, minimum=0),
            retry_after_format=p.choice("retryAfterFormat", "seconds", ("seconds", "http-date")),
            body=p.choice("body", "empty", ("empty", "jsonrpc")),
            error_code=p.integer("errorCode", -32000),
            error_message=p.string("errorMessage", "Rate limit exceeded"),
            null_result=p.boolean("nullResult", False),
            match=p.match(),
        )

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Refuse the hit POSTs with 429; the request never reaches the server."""
        if not run.hit(self.match, facts):
            return Pass()
        headers: list[tuple[str, str]] = []
        if self.retry_after is not None:
            headers.append(("retry-after", self._retry_after_value(now)))
        body = b""
        if self.body == "jsonrpc":
            error = jsonrpc_error(facts.request_id, self.error_code, self.error_message)
            if self.null_result:
                # Seen in the wild (awslabs/mcp #2949): `result: null` next to `error`.
                error = {"jsonrpc": "2.0", "id": facts.request_id, "result": None} | error
            headers.extend(JSON_HEADERS)
            body = json.dumps(error).encode()
        return Reply(429, "rate_limit", tuple(headers), body)

    def _retry_after_value(self, now: float) -> str:
        assert self.retry_after is not None
        if self.retry_after_format == "seconds":
            return str(self.retry_after)
        return email.utils.formatdate(now + self.retry_after, usegmt=True)
