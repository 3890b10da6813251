"""The scenarios: each turns one POST (and its run's counters) into an action.

Deciding is pure apart from the run's counters it advances; nothing here touches a
socket or a clock it was not handed.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal, Protocol

import attrs

from mcp_safe_retry_kitchen._actions import (
    ABORT_MODES,
    MALFORMED_KINDS,
    Abort,
    AbortMode,
    Action,
    DropSession,
    Late,
    MalformedKind,
    Mangle,
    Pass,
    Reply,
    Respond,
    Truncate,
)
from mcp_safe_retry_kitchen._facts import RequestFacts
from mcp_safe_retry_kitchen._params import Match, Params, ScenarioError

_JSON = (("content-type", "application/json"),)
SESSION_NOT_FOUND = -32600
_WHEN: tuple[Literal["before", "after"], ...] = ("before", "after")


@attrs.define
class RunCounters:
    """The mutable counters of one run that scenarios advance.

    Attributes:
        posts: Every POST of the run so far, this one included.
        matched: POSTs the scenario's `Match` selected so far.
        session_posts: POSTs seen per `Mcp-Session-Id`.
        expired: Session ids the kitchen declared expired.
        dropped: Session ids the kitchen ended inside the real server.
    """

    posts: int = 0
    matched: int = 0
    session_posts: Counter[str] = attrs.field(factory=Counter)
    expired: set[str] = attrs.field(factory=set)
    dropped: set[str] = attrs.field(factory=set)

    def hit(self, match: Match, facts: RequestFacts) -> bool:
        """Count `facts` against `match` and return whether the fault hits it."""
        if not match.selects(facts):
            return False
        self.matched += 1
        return match.hits(self.matched)


class Scenario(Protocol):
    """A named fault, configured once per run, deciding what happens to each POST."""

    name: ClassVar[str]

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Return what to do with this POST (`now` is wall-clock seconds)."""
        ...


def jsonrpc_error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """Return a JSON-RPC error response object."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def session_not_found(request_id: Any) -> Reply:
    """Return the 404 the SDK gives a session it does not know."""
    body = jsonrpc_error(request_id, SESSION_NOT_FOUND, "Session not found")
    return Reply(404, "session_expired", _JSON, json.dumps(body).encode())


@attrs.frozen
class Baseline:
    """The real server, optionally late: `delayMs` before matching POSTs reach it."""

    name: ClassVar[str] = "baseline"
    delay_ms: int
    match: Match

    @classmethod
    def read(cls, p: Params) -> Baseline:
        """Read `delayMs` and the match filter (default: every tools/call)."""
        return cls(p.integer("delayMs", 0, minimum=0, maximum=60_000), p.match(default_times=None))

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Delay matching POSTs, pass everything."""
        if self.delay_ms and run.hit(self.match, facts):
            return Pass(delay_s=self.delay_ms / 1000)
        return Pass()


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
            headers.extend(_JSON)
            body = json.dumps(error).encode()
        return Reply(429, "rate_limit", tuple(headers), body)

    def _retry_after_value(self, now: float) -> str:
        assert self.retry_after is not None
        if self.retry_after_format == "seconds":
            return str(self.retry_after)
        return email.utils.formatdate(now + self.retry_after, usegmt=True)


@attrs.frozen
class SseTruncated:
    """An SSE response that ends after `events` notifications, before the response."""

    name: ClassVar[str] = "sse_truncated"
    events: int
    when: Literal["before", "after"]
    mode: Literal["clean", "abrupt"]
    match: Match

    @classmethod
    def read(cls, p: Params) -> SseTruncated:
        """Read `events`, `when` (tool not run / run), `mode` (clean end / drop) and the filter."""
        return cls(
            p.integer("events", 1, minimum=0, maximum=1000),
            p.choice("when", "after", _WHEN),
            p.choice("mode", "clean", ("clean", "abrupt")),
            p.match(requests_only=True),
        )

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Truncate the hit POSTs' streams."""
        if run.hit(self.match, facts):
            return Truncate(self.events, self.when == "after", self.mode == "abrupt")
        return Pass()


@attrs.frozen
class ConnectionAbort:
    """The connection drops with no complete response, before or after the tool ran."""

    name: ClassVar[str] = "connection_abort"
    when: Literal["before", "after"]
    mode: AbortMode
    match: Match

    @classmethod
    def read(cls, p: Params) -> ConnectionAbort:
        """Read `when`, `mode` ("close", "reset", "partial") and the match filter."""
        return cls(
            p.choice("when", "before", _WHEN), p.choice("mode", "close", ABORT_MODES), p.match()
        )

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Drop the hit POSTs' connections."""
        if run.hit(self.match, facts):
            return Abort(self.when == "after", self.mode)
        return Pass()


@attrs.frozen
class SessionExpired:
    """Declare a session expired: its matching POST and everything after it get 404.

    A session expires at the first POST selected by the filter (default: tools/call)
    that arrives after `afterRequests` of its POSTs went through; every POST carrying
    its `Mcp-Session-Id` counts, `notifications/initialized` included. `times` sessions
    expire per run. Requests without `Mcp-Session-Id` (stateless, 2026-07-28) never do.
    """

    name: ClassVar[str] = "session_expired"
    after_requests: int
    match: Match

    @classmethod
    def read(cls, p: Params) -> SessionExpired:
        """Read `afterRequests`, `times` (sessions to expire) and `method`/`tool`."""
        after = p.integer("afterRequests", 0, minimum=0)
        match = Match(
            methods=p.methods("tools/call"),
            tool=p.optional_string("tool"),
            times=p.integer("times", 1, minimum=0),
        )
        return cls(after, match)

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Answer 404 for expired sessions; expire the next one when it is due."""
        session = facts.session_id
        if session is None:
            return Pass()
        if session in run.expired:
            return session_not_found(facts.request_id)
        run.session_posts[session] += 1
        due = run.session_posts[session] > self.after_requests
        if due and self.match.selects(facts) and len(run.expired) < (self.match.times or 0):
            run.expired.add(session)
            return session_not_found(facts.request_id)
        return Pass()


@attrs.frozen
class SessionDropped:
    """The real server forgets a session between two calls: 404 for everything after.

    After the session's `afterCalls`-th POST selected by the filter (default: tools/call)
    has been answered, the kitchen ends the session inside the real server. The next
    request carrying its `Mcp-Session-Id` (POST, GET or DELETE) gets the server's own 404
    "Session not found", exactly as from a server that expired the session; a new
    `initialize` opens a new one. `times` sessions are dropped per run. Requests without
    `Mcp-Session-Id` (stateless, 2026-07-28) never are.
    """

    name: ClassVar[str] = "session_dropped"
    after_calls: int
    match: Match

    @classmethod
    def read(cls, p: Params) -> SessionDropped:
        """Read `afterCalls`, `times` (sessions to drop) and `method`/`tool`."""
        after = p.integer("afterCalls", 1, minimum=1)
        match = Match(
            methods=p.methods("tools/call"),
            tool=p.optional_string("tool"),
            times=p.integer("times", 1, minimum=0),
            requests_only=True,
        )
        return cls(after, match)

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Pass everything; drop the session once its selected POSTs reach the count."""
        session = facts.session_id
        if session is None or session in run.dropped or not self.match.selects(facts):
            return Pass()
        run.session_posts[session] += 1
        due = run.session_posts[session] >= self.after_calls
        if due and len(run.dropped) < (self.match.times or 0):
            run.dropped.add(session)
            return DropSession()
        return Pass()


@attrs.frozen
class Malformed:
    """The tool runs, then its answer arrives corrupted in the way `kind` names."""

    name: ClassVar[str] = "malformed"
    kind: MalformedKind
    match: Match

    @classmethod
    def read(cls, p: Params) -> Malformed:
        """Read the required `kind` and the match filter (default: first tools/call)."""
        if p.raw("kind") is None:
            raise ScenarioError(f"malformed: 'kind' is required, one of {list(MALFORMED_KINDS)}")
        return cls(p.choice("kind", "invalid_json", MALFORMED_KINDS), p.match(requests_only=True))

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Corrupt the hit POSTs' answers."""
        if run.hit(self.match, facts):
            return Mangle(self.kind)
        return Pass()


@attrs.frozen
class ElicitationApproval:
    """The `approve` tool's real elicitation round trip; no fault is injected.

    On 2026-07-28 the SDK answers `resultType: "input_required"` with an elicitation
    form and a sealed `requestState`; before that it sends `elicitation/create` on the
    request's SSE stream (stateful, SSE mode only).
    """

    name: ClassVar[str] = "elicitation.approval"

    @classmethod
    def read(cls, p: Params) -> ElicitationApproval:
        """Take no params."""
        return cls()

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Pass everything: the approval flow is the server's own."""
        return Pass()


MAX_SLOW_TAIL_MS = 10_000
"""The longest delay `latency.slow_tail` adds to one POST."""


@attrs.frozen
class SlowTail:
    """A slow tail: each matching POST draws its own delay, so a copy of a slow request
    (a retry, a hedge) is usually fast.

    On average one matching POST in `slowEvery` waits `slowMs` before it reaches the server;
    the others wait `fastMs` plus up to `jitterMs`. With `pattern` "random" (the default) the
    draw depends only on `seed` and the POST's number among the run's matching POSTs, so a
    run replays exactly; "periodic" makes POSTs number `slowEvery`, `2 * slowEvery`, ... slow.
    A client that leaves during the delay is never served (recorded as
    `slow_tail:<slow|fast>:abandoned`, no status, no tool execution).
    """

    name: ClassVar[str] = "latency.slow_tail"
    slow_every: int
    slow_ms: int
    fast_ms: int
    jitter_ms: int
    pattern: Literal["random", "periodic"]
    seed: int
    match: Match

    @classmethod
    def read(cls, p: Params) -> SlowTail:
        """Read the delays, `pattern`, `seed` and the match filter (default: every tools/call)."""
        tail = cls(
            slow_every=p.integer("slowEvery", 10, minimum=1, maximum=1_000_000),
            slow_ms=p.integer("slowMs", 1000, minimum=0, maximum=MAX_SLOW_TAIL_MS),
            fast_ms=p.integer("fastMs", 0, minimum=0, maximum=MAX_SLOW_TAIL_MS),
            jitter_ms=p.integer("jitterMs", 0, minimum=0, maximum=MAX_SLOW_TAIL_MS),
            pattern=p.choice("pattern", "random", ("random", "periodic")),
            seed=p.integer("seed", 0),
            match=p.match(default_times=None, requests_only=True),
        )
        if tail.fast_ms + tail.jitter_ms > MAX_SLOW_TAIL_MS:
            raise ScenarioError(f"{cls.name}: fastMs + jitterMs must be at most {MAX_SLOW_TAIL_MS}")
        return tail

    def decide(self, facts: RequestFacts, run: RunCounters, now: float) -> Action:
        """Delay the hit POSTs by their own draw."""
        if not run.hit(self.match, facts):
            return Pass()
        slow, delay_ms = self.delay_of(run.matched)
        return Late(delay_ms / 1000, "slow_tail:slow" if slow else "slow_tail:fast")

    def delay_of(self, number: int) -> tuple[bool, int]:
        """Whether matching POST `number` (1-based) is slow, and its delay in ms."""
        digest = hashlib.blake2b(f"{self.seed}:{number}".encode(), digest_size=16).digest()
        draw = int.from_bytes(digest[:8], "big") / 2**64
        jitter = int.from_bytes(digest[8:], "big") % (self.jitter_ms + 1)
        if self.pattern == "periodic":
            slow = number % self.slow_every == 0
        else:
            slow = draw < 1 / self.slow_every
        return slow, self.slow_ms if slow else self.fast_ms + jitter


_READERS: Mapping[str, Callable[[Params], Scenario]] = {
    cls.name: cls.read
    for cls in (
        Baseline,
        HttpStatusSequence,
        JsonRpcErrorScenario,
        ToolErrorScenario,
        RateLimit,
        SseTruncated,
        ConnectionAbort,
        SessionExpired,
        SessionDropped,
        Malformed,
        ElicitationApproval,
        SlowTail,
    )
}
SCENARIO_NAMES: tuple[str, ...] = tuple(_READERS)


def parse_scenario(name: str, params: Mapping[str, Any] | None = None) -> Scenario:
    """Return the scenario `name` configured by `params`.

    Raises:
        ScenarioError: Unknown scenario, unknown param, or a param of the wrong type.
    """
    reader = _READERS.get(name)
    if reader is None:
        raise ScenarioError(f"unknown scenario {name!r}; known: {list(SCENARIO_NAMES)}")
    p = Params(name, params or {})
    scenario = reader(p)
    p.done()
    return scenario
