"""Soak run: thousands of MCP tool calls through mcp-safe-retry against the fault kitchen.

Every call gets its own kitchen run (``url_for(..., run=...)``), so the kitchen's POST log
and execution counts can be attributed to exactly one call and compared with the call's
record. The fault of each call, its tool (``lookup``, declared READ, or ``charge``, UNSAFE,
with a key no other call uses) and its client path are drawn from a seeded random mix:

- ``raw``: a 2026-07-28 ``tools/call`` POSTed with httpx through ``AsyncRetryTransport``
  against a stateless JSON kitchen (no handshake needed in that era);
- ``raw-contained``: the same with ``contain_failures=True``;
- ``sdk-2026``: the official ``mcp`` 2.x ``Client`` over ``mcp_safe_retry.httpx2.mcp_client``,
  protocol 2026-07-28 pinned (no discover probe), one session per call;
- ``sdk-2025``: the official client in ``mode="legacy"`` against a legacy-only, stateful
  kitchen (initialize handshake, SSE answers), one session per call.

Run it with ``python benchmarks/soak.py --calls 10000`` (``--json`` for a machine-readable
report). It exits 1 when an invariant fails or the run does not finish in time, and stops
by itself: a global timeout cancels the calls, and a watchdog ends the process if even
that does not return.
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib.util
import json
import logging
import random
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx

if importlib.util.find_spec("mcp_safe_retry") is None:  # a checkout without an install
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from mcp_safe_retry import (
    AsyncRetryTransport,
    History,
    Idempotency,
    RetryBudget,
    RetryPolicy,
    get_record,
)
from mcp_safe_retry.core.attempt_kinds import AttemptKind
from mcp_safe_retry.kitchen import KitchenServer, KitchenState, PostRecord
from mcp_safe_retry.records import (
    CONTAINED_ERROR_CODE,
    Attempt,
    CallRecord,
    Outcome,
    Reason,
    RetryOrigin,
)

__all__ = [
    "FAULTS",
    "PATHS",
    "CallResult",
    "Fault",
    "PlannedCall",
    "SoakConfig",
    "SoakReport",
    "check",
    "main",
    "plan_calls",
    "run_soak",
]

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ACCEPT = "application/json, text/event-stream"
_MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
CONTAINED_CODE = CONTAINED_ERROR_CODE
SUCCESS_OUTCOMES = frozenset({"TOOL_SUCCESS"})

PATHS = ("raw", "raw-contained", "sdk-2026", "sdk-2025")
RAW_PATHS = frozenset({"raw", "raw-contained"})
SDK_PATHS = frozenset({"sdk-2026", "sdk-2025"})


@dataclass(frozen=True)
class Fault:
    """One entry of the fault mix: a kitchen scenario and how often it is drawn.

    Attributes:
        label: Name in the report.
        scenario: Kitchen scenario name.
        params: Its params.
        weight: Relative frequency.
        paths: Client paths it is drawn for (all by default).
        over_cap: The server asks to wait longer than ``max_retry_after``: by policy the
            call is not retried, so the retry invariant exempts it.
    """

    label: str
    scenario: str
    params: Mapping[str, Any] | None = None
    weight: float = 1.0
    paths: frozenset[str] = frozenset(PATHS)
    over_cap: bool = False


# Faults that count every POST of a run (the status sequence) would hit the 2025-11-25
# handshake first; they are drawn for the paths that send nothing but the tools/call.
_NO_HANDSHAKE = frozenset({"raw", "raw-contained", "sdk-2026"})
# A response with someone else's id leaves the official client waiting for its own until
# its read timeout: nothing a transport can change, so only the raw paths draw it.
_RAW_ONLY = RAW_PATHS

FAULTS: tuple[Fault, ...] = (
    Fault("baseline", "baseline", None, 26),
    Fault("baseline.delay20ms", "baseline", {"delayMs": 20}, 2),
    Fault(
        "http.503-once",
        "errors.http_status_sequence",
        {"statusCodes": [503, 200]},
        7,
        _NO_HANDSHAKE,
    ),
    Fault(
        "http.503-twice",
        "errors.http_status_sequence",
        {"statusCodes": [503, 503, 200]},
        3,
        _NO_HANDSHAKE,
    ),
    Fault(
        "http.503-always", "errors.http_status_sequence", {"statusCodes": [503]}, 2, _NO_HANDSHAKE
    ),
    Fault(
        "http.502-once",
        "errors.http_status_sequence",
        {"statusCodes": [502, 200]},
        1,
        _NO_HANDSHAKE,
    ),
    Fault(
        "http.500-then-504",
        "errors.http_status_sequence",
        {"statusCodes": [500, 504, 200]},
        1,
        _NO_HANDSHAKE,
    ),
    Fault("http.400", "errors.http_status_sequence", {"statusCodes": [400, 200]}, 1, _NO_HANDSHAKE),
    Fault("rate_limit.0s", "rate_limit", {"retryAfter": 0}, 5),
    Fault("rate_limit.1s", "rate_limit", {"retryAfter": 1}, 0.5),
    Fault("rate_limit.0s-jsonrpc-body", "rate_limit", {"retryAfter": 0, "body": "jsonrpc"}, 1),
    Fault(
        "rate_limit.http-date",
        "rate_limit",
        {"retryAfter": 0, "retryAfterFormat": "http-date"},
        0.5,
    ),
    Fault("rate_limit.60s-over-cap", "rate_limit", {"retryAfter": 60}, 0.5, over_cap=True),
    Fault("abort.before.close", "connection_abort", {"when": "before", "mode": "close"}, 3),
    Fault("abort.before.reset", "connection_abort", {"when": "before", "mode": "reset"}, 2),
    Fault("abort.before.partial", "connection_abort", {"when": "before", "mode": "partial"}, 1),
    Fault("abort.after.close", "connection_abort", {"when": "after", "mode": "close"}, 3),
    Fault("abort.after.reset", "connection_abort", {"when": "after", "mode": "reset"}, 2),
    Fault("abort.after.partial", "connection_abort", {"when": "after", "mode": "partial"}, 1),
    Fault("abort.twice", "connection_abort", {"when": "before", "times": 2}, 1),
    Fault("sse_truncated.before.clean", "sse_truncated", {"when": "before", "events": 1}, 2),
    Fault(
        "sse_truncated.before.abrupt",
        "sse_truncated",
        {"when": "before", "mode": "abrupt", "events": 0},
        1.5,
    ),
    Fault("sse_truncated.after.clean", "sse_truncated", {"when": "after", "events": 2}, 2),
    Fault("sse_truncated.after.abrupt", "sse_truncated", {"when": "after", "mode": "abrupt"}, 1.5),
    Fault("tool_error", "errors.tool_error", None, 3),
    Fault("jsonrpc_error", "errors.jsonrpc_error", {"code": -32001, "message": "Upstream"}, 3),
    Fault("malformed.invalid_json", "malformed", {"kind": "invalid_json"}, 1),
    Fault("malformed.wrong_id", "malformed", {"kind": "wrong_id"}, 1, _RAW_ONLY),
    Fault("malformed.missing_jsonrpc", "malformed", {"kind": "missing_jsonrpc"}, 1),
    Fault("malformed.result_and_error", "malformed", {"kind": "result_and_error"}, 1),
    Fault("malformed.wrong_content_type", "malformed", {"kind": "wrong_content_type"}, 1),
    Fault("malformed.empty_body", "malformed", {"kind": "empty_body"}, 1),
)


@dataclass(frozen=True)
class SoakConfig:
    """What to run.

    Attributes:
        calls: Tool calls to make.
        concurrency: Calls in flight at once.
        seed: Seed of the fault, tool and path mix (jitter uses the system's randomness).
        sdk_share: Share of the calls made through the official client (half per era).
        read_share: Share of the calls to ``lookup`` (READ); the rest call ``charge``.
        contained_share: Share of the raw calls sent with ``contain_failures=True``.
        max_retries: The policy's re-sends after the first attempt.
        initial_backoff: Seconds before the first retry.
        max_backoff: Cap on one backoff.
        budget_tokens: ``RetryBudget`` burst; large, so the run measures the policy.
        budget_ratio: Retries a healthy attempt earns back (``per_success``).
        call_timeout: Seconds one call may take before it is cancelled (counted as a hang).
        redis_url: A Redis to share the budget and a breaker through (the fleet mode,
            ``benchmarks/soak_fleet.py``); None: a local ``RetryBudget`` and no breaker.
        shared_name: The name the fleet's ``RedisBudget`` and ``RedisCircuitBreaker`` share.
        breaker_threshold: Transient failures in a row that open the fleet's breaker. Every
            call of a kitchen goes to one URL, so the mixed faults trip it again and again.
        breaker_open_for: Seconds it stays open (a Retry-After never holds it longer).
        global_timeout: Seconds the whole run may take; then everything is cancelled.
        faults: The fault mix.
    """

    calls: int = 10_000
    concurrency: int = 16
    seed: int = 1
    sdk_share: float = 0.1
    read_share: float = 0.55
    contained_share: float = 0.5
    max_retries: int = 2
    initial_backoff: float = 0.001
    max_backoff: float = 0.05
    budget_tokens: float = 1_000_000.0
    budget_ratio: float = 1.0
    call_timeout: float = 30.0
    global_timeout: float = 900.0
    faults: tuple[Fault, ...] = FAULTS
    redis_url: str | None = None
    shared_name: str = "soak"
    breaker_threshold: int = 3
    breaker_open_for: float = 0.05

    def policy(self) -> RetryPolicy:
        """The retry policy of every transport in the run."""
        return RetryPolicy(
            max_retries=self.max_retries,
            initial_backoff=self.initial_backoff,
            max_backoff=self.max_backoff,
            tools={"lookup": Idempotency.READ},
        )


@dataclass(frozen=True)
class PlannedCall:
    """One call of the run, drawn before anything is sent."""

    index: int
    path: str
    tool: str
    fault: Fault
    key: str

    @property
    def run(self) -> str:
        """The kitchen run of this call (one per call)."""
        return f"soak-{self.index}"

    @property
    def request_id(self) -> str:
        """The JSON-RPC id of a raw call (the official client numbers its own)."""
        return f"call-{self.index}"

    @property
    def read(self) -> bool:
        """Whether the tool is declared READ."""
        return self.tool == "lookup"

    def arguments(self) -> dict[str, Any]:
        """The tool arguments: a key no other call uses."""
        if self.tool == "lookup":
            return {"key": self.key}
        return {"key": self.key, "amount": 100 + self.index % 900}


@dataclass
class CallResult:
    """What one call came to: what the client saw and what the transport recorded.

    ``client`` is one of ``result``, ``tool_error``, ``rpc_error:<code>``, ``http:<status>``,
    ``no_response`` (no JSON-RPC response for this call in the body), ``invalid`` (not
    JSON-RPC 2.0), ``wrong_id``,
    ``crossed`` (a result for another call's key), ``exception:<type>``, ``timeout``.
    """

    call: PlannedCall
    client: str
    records: list[CallRecord] = field(default_factory=list)
    seconds: float = 0.0
    # The official client's other requests of the session (initialize, ...): a handshake the
    # breaker held back ends the call before its tools/call exists.
    setup: list[CallRecord] = field(default_factory=list)

    @property
    def client_success(self) -> bool:
        """The client holds this call's successful tool result."""
        return self.client == "result"


@dataclass(frozen=True)
class Invariant:
    """One checked property: its name, whether it held, and the evidence."""

    name: str
    passed: bool
    detail: str
    failures: tuple[str, ...] = ()


@dataclass
class SoakReport:
    """The numbers of one run and the verdict on each invariant."""

    config: SoakConfig
    stats: dict[str, Any]
    invariants: list[Invariant]

    @property
    def passed(self) -> bool:
        """All invariants held."""
        return all(inv.passed for inv in self.invariants)

    def to_json(self) -> dict[str, Any]:
        """The report as plain JSON types."""
        c = self.config
        return {
            "config": {
                "calls": c.calls,
                "concurrency": c.concurrency,
                "seed": c.seed,
                "sdkShare": c.sdk_share,
                "readShare": c.read_share,
                "containedShare": c.contained_share,
                "policy": {
                    "maxRetries": c.max_retries,
                    "initialBackoff": c.initial_backoff,
                    "maxBackoff": c.max_backoff,
                    "jitter": "equal",
                    "maxRetryAfter": c.policy().max_retry_after,
                },
                "budget": {"burst": c.budget_tokens, "perSuccess": c.budget_ratio},
                "callTimeout": c.call_timeout,
                "globalTimeout": c.global_timeout,
            },
            "stats": self.stats,
            "invariants": [
                {
                    "name": inv.name,
                    "passed": inv.passed,
                    "detail": inv.detail,
                    "failures": list(inv.failures[:20]),
                    "failureCount": len(inv.failures),
                }
                for inv in self.invariants
            ],
            "passed": self.passed,
        }

    def render(self) -> str:
        """The report as text."""
        s = self.stats
        c = self.config
        lines = [
            f"mcp-safe-retry soak: {s['calls']} calls (planned {c.calls}), seed {c.seed}, "
            f"concurrency {c.concurrency}, {s['durationS']:.1f} s "
            f"({s['callsPerS']:.0f} calls/s, slowest call {s['slowestCallS']:.2f} s)",
            f"policy: max_retries={c.max_retries} initial_backoff={c.initial_backoff}s "
            f"max_backoff={c.max_backoff}s jitter=equal max_retry_after="
            f"{c.policy().max_retry_after:g}s; budget RetryBudget(burst={c.budget_tokens:g}, "
            f"per_success={c.budget_ratio:g}), tokens left {s['budgetTokensLeft']:g}",
            f"paths: {_fmt(s['paths'])}",
            f"tools: {_fmt(s['tools'])}",
            f"POSTs: {s['posts']['all']} seen by the kitchen, {s['posts']['toolsCall']} of them "
            f"tools/call; records count {s['posts']['recorded']} tools/call POSTs; "
            f"{s['posts']['perCall']:.3f} per call, max {s['posts']['maxPerCall']}",
            f"POSTs per call: {_fmt(s['posts']['histogram'])}",
            f"retries: {s['retries']['total']} in {s['retries']['callsRetried']} calls; "
            f"by reason: {_fmt(s['retries']['byReason'])}",
            f"decisions: {_fmt(s['decisions'])}",
            f"final outcomes (records): {_fmt(s['outcomes'])}",
            f"client saw: {_fmt(s['client'])}",
            f"READ calls hit by a transient fault: {s['read']['transientlyFaulted']}, "
            f"recovered {s['read']['recovered']}, retried {s['read']['retried']}",
            f"charge executions per key: {_fmt(s['charge']['executionsPerKey'])} "
            f"({s['charge']['keys']} keys, {s['charge']['executions']} executions, "
            f"max {s['charge']['maxPerKey']})",
            f"lookup executions: {s['lookupExecutions']}",
            f"breaker: {s['breaker']['heldCalls']} calls held ({_fmt(s['breaker']['held'])}); "
            f"opened {s['breaker']['opens']}x, closed {s['breaker']['closes']}x "
            "(from the records: runs of held attempts per kitchen in send order)",
            f"faults drawn: {_fmt(s['faults'])}",
            "invariants:",
        ]
        for inv in self.invariants:
            lines.append(f"  {'PASS' if inv.passed else 'FAIL'} {inv.name}: {inv.detail}")
            lines.extend(f"       {failure}" for failure in inv.failures[:10])
            if len(inv.failures) > 10:
                lines.append(f"       ... {len(inv.failures) - 10} more")
        lines.append(f"RESULT: {'PASS' if self.passed else 'FAIL'}")
        return "\n".join(lines)


def _fmt(counts: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "-"


# -- planning --------------------------------------------------------------------------


def plan_calls(config: SoakConfig) -> list[PlannedCall]:
    """Draw every call's path, tool and fault from the seed."""
    rng = random.Random(config.seed)
    calls = []
    for index in range(config.calls):
        if rng.random() < config.sdk_share:
            path = "sdk-2026" if rng.random() < 0.5 else "sdk-2025"
        else:
            path = "raw-contained" if rng.random() < config.contained_share else "raw"
        tool = "lookup" if rng.random() < config.read_share else "charge"
        eligible = [f for f in config.faults if path in f.paths]
        fault = rng.choices(eligible, weights=[f.weight for f in eligible])[0]
        calls.append(PlannedCall(index, path, tool, fault, f"{tool}-{config.seed}-{index}"))
    return calls


# -- running ---------------------------------------------------------------------------


class _RecordIndex:
    """A hook keeping every finished record by its request id (the raw calls' ids are unique)."""

    def __init__(self) -> None:
        self.by_id: dict[object, list[CallRecord]] = {}

    def on_attempt(self, record: CallRecord, attempt: Attempt) -> None:
        """Attempts are read from the finished record."""

    def on_call(self, record: CallRecord) -> None:
        """File a finished record under its request id."""
        self.by_id.setdefault(record.request_id, []).append(record)


class _Clients:
    """The transports and clients of one run."""

    def __init__(self, config: SoakConfig, modern: KitchenServer, legacy: KitchenServer):
        self.config = config
        self.modern = modern
        self.legacy = legacy
        self.policy = config.policy()
        self.budget: Any = RetryBudget(config.budget_tokens, config.budget_ratio)
        self.breaker: Any = None
        if config.redis_url is not None:
            from mcp_safe_retry.redis import RedisBudget, RedisCircuitBreaker

            name = config.shared_name
            self.budget = RedisBudget(
                config.redis_url, name=name, burst=config.budget_tokens, per_success=1.0
            )
            # Every call of a kitchen goes to one URL (the run is in the query), so the mix
            # of faults trips the circuit again and again; open briefly, so it also closes
            # (a 60 s Retry-After does not hold it open longer), and refresh the shared
            # state often. The checks below follow every held attempt.
            self.breaker = RedisCircuitBreaker(
                config.redis_url,
                name=name,
                failure_threshold=config.breaker_threshold,
                open_for=config.breaker_open_for,
                max_open_for=config.breaker_open_for,
                refresh=min(0.05, config.breaker_open_for / 4),
            )
        self.index = _RecordIndex()
        timeout = httpx.Timeout(10.0)
        self.raw = httpx.AsyncClient(
            transport=AsyncRetryTransport(
                policy=self.policy, budget=self.budget, breaker=self.breaker, hooks=[self.index]
            ),
            timeout=timeout,
        )
        self.raw_contained = httpx.AsyncClient(
            transport=AsyncRetryTransport(
                policy=self.policy,
                budget=self.budget,
                breaker=self.breaker,
                hooks=[self.index],
                contain_failures=True,
            ),
            timeout=timeout,
        )

    async def aclose(self) -> None:
        await self.raw.aclose()
        await self.raw_contained.aclose()
        if self.breaker is not None:  # shared: the transports never close them
            await anyio.to_thread.run_sync(self.breaker.close)
            await anyio.to_thread.run_sync(self.budget.close)

    def tokens(self) -> float:
        """The budget's tokens left (the shared count for a fleet; 0 if Redis is away)."""
        return float(self.budget.tokens or 0.0)

    async def call(self, call: PlannedCall) -> CallResult:
        """Make one call on its path; never raises (but for cancellation)."""
        start = time.perf_counter()
        try:
            with anyio.fail_after(self.config.call_timeout):
                if call.path in RAW_PATHS:
                    result = await self._raw(call)
                else:
                    result = await self._sdk(call)
        except TimeoutError:
            result = CallResult(call, "timeout", self._raw_records(call))
        result.seconds = time.perf_counter() - start
        return result

    def _raw_records(self, call: PlannedCall) -> list[CallRecord]:
        return list(self.index.by_id.get(call.request_id, ()))

    async def _raw(self, call: PlannedCall) -> CallResult:
        client = self.raw if call.path == "raw" else self.raw_contained
        url = self.modern.url_for(call.fault.scenario, call.fault.params, run=call.run)
        body = {
            "jsonrpc": "2.0",
            "id": call.request_id,
            "method": "tools/call",
            "params": {"name": call.tool, "arguments": call.arguments(), "_meta": _MODERN_META},
        }
        headers = {
            "accept": ACCEPT,
            "mcp-protocol-version": MODERN,
            "mcp-method": "tools/call",
            "mcp-name": call.tool,
        }
        try:
            response = await client.post(url, json=body, headers=headers)
        except httpx.HTTPError as exc:
            return CallResult(call, f"exception:{type(exc).__name__}", self._raw_records(call))
        records = self._raw_records(call)
        attached = get_record(response)
        if attached is not None and not any(r is attached for r in records):
            records.append(attached)  # a second, different record: the check reports it
        return CallResult(call, _raw_outcome(call, response), records)

    async def _sdk(self, call: PlannedCall) -> CallResult:
        # Imported here so the raw paths work without mcp 2.x and httpx2 installed.
        from mcp.client import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared.exceptions import MCPError

        from mcp_safe_retry.httpx2 import mcp_client

        modern = call.path == "sdk-2026"
        kitchen = self.modern if modern else self.legacy
        url = kitchen.url_for(call.fault.scenario, call.fault.params, run=call.run)
        history = History(maxlen=64)  # this session's records only
        outcome = "no_response"
        async with mcp_client(
            policy=self.policy,
            history=history,
            budget=self.budget,
            breaker=self.breaker,
            timeout=10.0,
        ) as http:
            try:
                async with Client(
                    streamable_http_client(url, http_client=http),
                    mode=MODERN if modern else "legacy",
                    read_timeout_seconds=10,
                ) as client:
                    try:
                        result = await client.call_tool(call.tool, call.arguments())
                    except MCPError as exc:
                        outcome = f"rpc_error:{exc.error.code}"
                    else:
                        outcome = _sdk_outcome(call, result.is_error, result.structured_content)
            except Exception as exc:  # the session itself failed (setup or teardown)
                if outcome == "no_response":
                    outcome = f"exception:{_leaf(exc)}"
        records = [r for r in history.records() if r.method == "tools/call"]
        setup = [r for r in history.records() if r.method != "tools/call"]
        return CallResult(call, outcome, records, setup=setup)


def _leaf(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return type(exc).__name__


def _sdk_outcome(call: PlannedCall, is_error: bool, structured: Any) -> str:
    if is_error:
        return "tool_error"
    if not isinstance(structured, dict) or structured.get("key") != call.key:
        return "crossed"
    return "result"


def _raw_outcome(call: PlannedCall, response: httpx.Response) -> str:
    """What a client reading this response would conclude about its call."""
    if response.status_code != 200:
        return f"http:{response.status_code}"
    message = _response_message(response)
    if message is None:
        return "no_response"
    if message.get("jsonrpc") != "2.0":
        return "invalid"
    if message.get("id") != call.request_id:
        return "wrong_id"
    error = message.get("error")
    if isinstance(error, dict) and "result" not in message:
        return f"rpc_error:{error.get('code')}"
    result = message.get("result")
    if not isinstance(result, dict) or "error" in message:
        return "no_response"
    if result.get("isError") is True:
        return "tool_error"
    structured = result.get("structuredContent")
    if not isinstance(structured, dict) or structured.get("key") != call.key:
        return "crossed"
    return "result"


def _response_message(response: httpx.Response) -> dict[str, Any] | None:
    """The JSON-RPC response in a JSON or SSE body, if there is exactly one readable."""
    content_type = response.headers.get("content-type", "")
    if content_type.startswith("text/event-stream"):
        texts = []
        for block in response.text.replace("\r\n", "\n").split("\n\n"):
            data = [
                line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")
            ]
            if data:
                texts.append("\n".join(data))
    elif content_type.startswith("application/json"):
        texts = [response.text]
    else:
        return None
    found = []
    for text in texts:
        try:
            message = json.loads(text)
        except ValueError:
            continue
        if isinstance(message, dict) and ("result" in message or "error" in message):
            found.append(message)
    return found[0] if len(found) == 1 else None


async def _drive(
    config: SoakConfig, clients: _Clients, plan: list[PlannedCall]
) -> list[CallResult]:
    results: list[CallResult] = []
    pending: Iterator[PlannedCall] = iter(plan)

    async def worker() -> None:
        for call in pending:  # one shared iterator: each call is taken once
            results.append(await clients.call(call))

    with anyio.move_on_after(config.global_timeout):
        async with anyio.create_task_group() as tg:
            for _ in range(max(1, min(config.concurrency, len(plan)))):
                tg.start_soon(worker)
    return results


def _settled_state(kitchens: Sequence[KitchenServer], limit_s: float = 5.0) -> KitchenState:
    """The kitchens' merged state once no POST has been logged for a moment."""
    deadline = time.monotonic() + limit_s
    last = -1
    while True:
        states = [k.state for k in kitchens]
        seen = sum(len(s.posts) for s in states)
        if seen == last or time.monotonic() > deadline:
            break
        last = seen
        time.sleep(0.2)
    counts: dict[Any, int] = {}
    for state in states:
        counts.update(state.execution_counts)
    return KitchenState(
        posts=tuple(p for s in states for p in s.posts),
        posts_dropped=sum(s.posts_dropped for s in states),
        execution_counts=counts,
    )


def run_soak(config: SoakConfig) -> SoakReport:
    """Start the kitchens, make the calls, stop the kitchens, and check the invariants."""
    plan = plan_calls(config)
    log_limit = max(10_000, config.calls * 8)
    # The official client logs a traceback for every malformed answer it is handed.
    quiet = [logging.getLogger(name) for name in ("mcp", "httpx", "httpx2")]
    levels = [logger.level for logger in quiet]
    for logger in quiet:
        logger.setLevel(logging.CRITICAL)
    try:
        with ExitStack() as stack:
            modern = stack.enter_context(
                KitchenServer(stateless=True, json_response=True, log_limit=log_limit)
            )
            legacy = stack.enter_context(KitchenServer(legacy_only=True, log_limit=log_limit))
            start = time.perf_counter()

            async def go() -> tuple[list[CallResult], float]:
                clients = _Clients(config, modern, legacy)
                try:
                    results = await _drive(config, clients, plan)
                    tokens = await anyio.to_thread.run_sync(clients.tokens)
                finally:
                    await clients.aclose()
                return results, tokens

            results, tokens = anyio.run(go)
            duration = time.perf_counter() - start
            state = _settled_state([modern, legacy])
    finally:
        for logger, level in zip(quiet, levels, strict=True):
            logger.setLevel(level)
    return check(config, plan, results, state, duration=duration, budget_tokens=tokens)


# -- checking --------------------------------------------------------------------------


def _is_transient(attempt: Attempt, policy: RetryPolicy) -> bool:
    """Whether an attempt ended in a failure the policy retries (for READ calls)."""
    outcome = attempt.classification.outcome
    if outcome is Outcome.NETWORK_ERROR:
        return attempt.error_kind not in ("local", "oversized", "decoding", "cancelled", "internal")
    if outcome is Outcome.STREAM_INCOMPLETE:
        return True
    # A retryable status answers for itself, whatever its body: a 2026-07-28 server's 429
    # or 503 carrying a JSON-RPC error reads as that error, the status kept, and is retried.
    return outcome in (Outcome.HTTP_ERROR, Outcome.JSONRPC_ERROR) and (
        attempt.status in policy.retry_statuses
    )


# The reasons for which a transient failure of a READ call with retries left may end it:
# the server asked for more than max_retry_after, the caller abandoned the call, or the
# budget ran dry (reported; the soak sizes the budget so that it does not).
_EXEMPT = frozenset({Reason.RETRY_AFTER_OVER_CAP, Reason.ABANDONED, Reason.THROTTLED})


def _server_transient(post: PostRecord, policy: RetryPolicy) -> bool:
    """Whether the kitchen answered this POST with a fault the policy retries."""
    return post.fault in ("connection_abort", "sse_truncated") or (
        post.status is not None and post.status in policy.retry_statuses
    )


def _reason(record: CallRecord, number: int) -> Reason | None:
    """The decision that followed attempt ``number`` (1-based), if there was one."""
    if len(record.attempts) < number:
        return None
    decision = record.attempts[number - 1].decision
    return decision.reason if decision is not None else None


class _Checker:
    """Goes through the calls once, collecting failures per invariant and the numbers."""

    def __init__(self, config: SoakConfig, state: KitchenState) -> None:
        self.config = config
        self.policy = config.policy()
        self.limit = config.max_retries + 1
        self.wire: dict[str, list[PostRecord]] = {}
        for post in state.posts:
            if post.method == "tools/call":
                self.wire.setdefault(post.run, []).append(post)
        self.executions: Counter[str] = Counter()
        self.lookup_executions = 0
        for (run, tool, _key), count in state.execution_counts.items():
            if tool == "charge":
                self.executions[run] += count
            elif tool == "lookup":
                self.lookup_executions += count
        self.failures: dict[str, list[str]] = {name: [] for name in _INVARIANTS}
        self.exempted: Counter[str] = Counter()
        self.retries: Counter[str] = Counter()
        self.decisions: Counter[str] = Counter()
        self.outcomes: Counter[str] = Counter()
        self.client: Counter[str] = Counter()
        self.post_hist: Counter[int] = Counter()
        self.faults: Counter[str] = Counter()
        self.origin_sdk = 0
        self.recorded_posts = 0
        self.held: Counter[str] = Counter()  # calls the breaker held, by when
        # Per kitchen (one breaker key each): (send time, held, transient failure).
        self.timeline: dict[str, list[tuple[float, bool, bool]]] = {}
        self.read_faulted = self.read_recovered = self.read_retried = 0

    def fail(self, invariant: str, message: str) -> None:
        self.failures[invariant].append(message)

    def see(self, result: CallResult) -> None:
        """Check one call against its record and the kitchen's log of its run."""
        call = result.call
        tag = f"call {call.index} ({call.path}, {call.tool}, {call.fault.label})"
        wire = self.wire.get(call.run, [])
        self.faults[call.fault.label] += 1
        self.client[
            result.client.split(":")[0] if "exception" in result.client else result.client
        ] += 1
        self.post_hist[len(wire)] += 1
        if result.client == "timeout":
            self.fail(
                "every_call_finished", f"{tag}: no answer within {self.config.call_timeout:g} s"
            )
        record = result.records[0] if len(result.records) == 1 else None
        self._time(call, [*result.records, *result.setup])
        handshake = None if result.records else _held_record(result.setup)
        if record is None and handshake is None:
            self.fail("complete_records", f"{tag}: {len(result.records)} records")
        self._bounded_and_once(call, tag, wire, record)
        if record is None:
            if handshake is not None:  # held before its tools/call existed
                self._held(result, tag, handshake, wire, in_handshake=True)
            return
        self._complete(tag, record)
        self._held(result, tag, record, wire, in_handshake=False)
        self.recorded_posts += record.post_count
        self.outcomes[record.outcome or "none"] += 1
        self.origin_sdk += record.retry_origin is RetryOrigin.SDK
        if record.post_count != len(wire):
            self.fail(
                "records_agree_with_server",
                f"{tag}: record {record.post_count} POSTs, kitchen {len(wire)}",
            )
        if (
            record.outcome in SUCCESS_OUTCOMES
            and not result.client_success
            and result.client == f"rpc_error:{CONTAINED_CODE}"
            and _held_record(result.setup) is not None
        ):
            # The official client asks tools/list after the call (to check the result
            # against the tool's output schema); the breaker held that request: the tool
            # ran, the client got the contained error of the tools/list.
            self.held["after_call"] += 1
        elif (record.outcome in SUCCESS_OUTCOMES) != result.client_success:
            last = record.attempts[-1] if record.attempts else None
            reason = last.decision.reason if last and last.decision else "-"
            detail = last.classification.detail if last else "-"
            self.fail(
                "records_agree_with_client",
                f"{tag}: client {result.client}, record {record.outcome} ({reason}: {detail})",
            )
        self._retries(call, tag, record, wire)

    def _time(self, call: PlannedCall, records: Sequence[CallRecord]) -> None:
        """Put every attempt of the call on its kitchen's timeline (one breaker key each)."""
        line = self.timeline.setdefault("legacy" if call.path == "sdk-2025" else "modern", [])
        for record in records:
            for attempt in record.attempts:
                line.append(
                    (
                        record.started_at + attempt.elapsed,
                        attempt.kind == AttemptKind.HELD,
                        _is_transient(attempt, self.policy),
                    )
                )

    def _held(
        self,
        result: CallResult,
        tag: str,
        record: CallRecord,
        wire: list[PostRecord],
        *,
        in_handshake: bool,
    ) -> None:
        """A held attempt sent nothing: it is the call's last, ends it ``CIRCUIT_OPEN``, and
        the kitchen logged exactly the POSTs sent before it (none for a held handshake)."""
        held = [a for a in record.attempts if a.kind == AttemptKind.HELD]
        if not held:
            return
        self.held[
            "handshake" if in_handshake else "retry" if len(record.attempts) > 1 else "first"
        ] += 1
        last = record.attempts[-1]
        decision = last.decision
        if (
            len(held) != 1
            or held[0] is not last
            or last.classification.outcome is not Outcome.CIRCUIT_OPEN
            or last.status is not None
            or decision is None
            or decision.retry
            or decision.reason is not Reason.CIRCUIT_OPEN
            or record.outcome != Outcome.CIRCUIT_OPEN
        ):
            self.fail(
                "held_attempts_sent_nothing",
                f"{tag}: held attempts {[a.number for a in held]} of {len(record.attempts)}, "
                f"last {last.classification.outcome} ({decision}), record {record.outcome}",
            )
        sent = 0 if in_handshake else record.post_count
        if len(wire) != sent:
            self.fail(
                "held_attempts_sent_nothing",
                f"{tag}: {sent} POSTs sent before the held attempt, kitchen logged {len(wire)}",
            )
        expected = _HELD_CLIENT.get(result.call.path)
        if result.client_success or (expected is not None and result.client != expected):
            self.fail(
                "held_attempts_sent_nothing", f"{tag}: held, yet the client saw {result.client}"
            )

    def _complete(self, tag: str, record: CallRecord) -> None:
        """Finished, with a verdict, and retries before the last attempt, a stop at it."""
        attempts = record.attempts
        if not (record.complete and record.classification is not None and attempts):
            self.fail("complete_records", f"{tag}: record not complete ({record.outcome})")
            return
        trail = [a.decision.retry if a.decision is not None else None for a in attempts]
        if trail != [True] * (len(attempts) - 1) + [False]:
            self.fail("complete_records", f"{tag}: attempt decisions {trail}")

    def _bounded_and_once(
        self, call: PlannedCall, tag: str, wire: list[PostRecord], record: CallRecord | None
    ) -> None:
        posted = record.post_count if record is not None else 0
        if len(wire) > self.limit or posted > self.limit:
            self.fail("posts_bounded", f"{tag}: kitchen saw {len(wire)} POSTs, record {posted}")
        if call.tool == "charge":
            ran = self.executions[call.run]
            if len(wire) > 1 or posted > 1 or ran > 1:
                self.fail(
                    "no_duplicate_side_effects",
                    f"{tag}: kitchen saw {len(wire)} POSTs, record {posted}, executed {ran}x",
                )

    def _retries(
        self, call: PlannedCall, tag: str, record: CallRecord, wire: list[PostRecord]
    ) -> None:
        faulted = False
        for attempt in record.attempts:
            decision = attempt.decision
            if decision is None:
                continue
            self.decisions[f"{decision.action}:{decision.reason}"] += 1
            transient = _is_transient(attempt, self.policy)
            if decision.retry:
                self.retries[str(decision.reason)] += 1
                if not (call.read and transient):
                    self.fail(
                        "only_transient_read_failures_retried",
                        f"{tag}: attempt {attempt.number} {attempt.classification.outcome} "
                        "was retried",
                    )
            if not (transient and call.read):
                continue
            faulted = faulted or decision.reason is not Reason.ABANDONED
            if attempt.number <= self.config.max_retries and not decision.retry:
                if decision.reason in _EXEMPT:
                    self.exempted[str(decision.reason)] += 1
                else:
                    self.fail(
                        "transient_read_faults_retried",
                        f"{tag}: attempt {attempt.number} {attempt.classification.outcome} "
                        f"not retried ({decision.reason})",
                    )
        if not call.read:
            return
        # The kitchen's side: a transient fault on POST n <= max_retries needs POST n+1.
        for n, post in enumerate(wire[: self.config.max_retries], start=1):
            if (
                _server_transient(post, self.policy)
                and len(wire) == n
                and not call.fault.over_cap
                and _reason(record, n) not in (Reason.THROTTLED, Reason.ABANDONED)
                and _reason(record, n + 1) is not Reason.CIRCUIT_OPEN  # the retry was held
            ):
                self.fail(
                    "transient_read_faults_retried",
                    f"{tag}: kitchen answered POST {n} with {post.fault or post.status}, "
                    f"no POST {n + 1} followed",
                )
        if faulted:
            self.read_faulted += 1
            self.read_recovered += record.outcome in SUCCESS_OUTCOMES
            self.read_retried += record.post_count > 1


def _held_record(records: Sequence[CallRecord]) -> CallRecord | None:
    """The record among ``records`` whose attempt the breaker held, if one is."""
    for record in records:
        if any(a.kind == AttemptKind.HELD for a in record.attempts):
            return record
    return None


# What the client of a raw path sees of a held call (the official client: any failure).
_HELD_CLIENT = {"raw": "exception:CircuitOpenError", "raw-contained": f"rpc_error:{CONTAINED_CODE}"}


def _spells(timeline: Sequence[tuple[float, bool, bool]]) -> tuple[int, int]:
    """Opens and closes seen on one breaker key: in send order, each run of held attempts
    is an open (a probe that failed starts another), and a run that gives way to a sent
    attempt which did not fail transiently (the successful probe) a close."""
    opens = closes = 0
    holding = False
    for _, held, failed in sorted(timeline):
        if held and not holding:
            opens += 1
        elif not held and holding:
            closes += not failed
        holding = held
    return opens, closes


_INVARIANTS = (
    "no_duplicate_side_effects",
    "held_attempts_sent_nothing",
    "complete_records",
    "posts_bounded",
    "transient_read_faults_retried",
    "only_transient_read_failures_retried",
    "records_agree_with_server",
    "records_agree_with_client",
    "every_call_finished",
)


def check(
    config: SoakConfig,
    plan: Sequence[PlannedCall],
    results: Sequence[CallResult],
    state: KitchenState,
    *,
    duration: float,
    budget_tokens: float,
) -> SoakReport:
    """Compute the report's numbers and check every invariant against records and kitchen."""
    checker = _Checker(config, state)
    done = {r.call.index for r in results}
    for call in plan:
        if call.index not in done:
            tag = f"call {call.index} ({call.path}, {call.tool}, {call.fault.label})"
            checker.fail("every_call_finished", f"{tag}: never finished")
            checker.fail("complete_records", f"{tag}: no record")
    for result in sorted(results, key=lambda r: r.call.index):
        checker.see(result)

    f = checker.failures
    charge_calls = [c for c in plan if c.tool == "charge"]
    per_key = Counter(checker.executions[c.run] for c in charge_calls)
    n = len(results)
    tools_call_posts = sum(len(v) for v in checker.wire.values())
    details = {
        "no_duplicate_side_effects": f"{len(charge_calls)} UNSAFE charge calls: each POSTed at "
        "most once (kitchen log and records) and executed at most once; max executions per "
        f"key {max(per_key, default=0)}",
        "complete_records": f"{len(plan) - len(f['complete_records'])} of {len(plan)} calls have "
        "exactly one complete record (a verdict; retries before the last attempt, a stop at it)",
        "posts_bounded": f"POSTs per call <= max_retries + 1 = {checker.limit} on the wire "
        "and in every record",
        "transient_read_faults_retried": f"{checker.read_faulted} READ calls met a transient "
        "fault; every such attempt with retries left was retried (records and kitchen log); "
        f"exempt: {_fmt(checker.exempted)}",
        "only_transient_read_failures_retried": f"all {sum(checker.retries.values())} retries "
        "followed a transient failure of a READ call",
        "held_attempts_sent_nothing": f"{sum(checker.held.values())} calls held by the breaker "
        f"({_fmt(checker.held)}): the held attempt ended each (CIRCUIT_OPEN, circuit_open), "
        "the kitchen logged only the POSTs sent before it, and the client got no result "
        "(after_call: the official client's tools/list after a call that succeeded was held)",
        "records_agree_with_server": "each record's POST count equals the tools/call POSTs "
        f"the kitchen logged for its run ({state.posts_dropped} log entries dropped)",
        "records_agree_with_client": "a record says TOOL_SUCCESS exactly when the client "
        "received the call's own result",
        "every_call_finished": f"{n} of {len(plan)} calls returned within "
        f"{config.call_timeout:g} s each and {config.global_timeout:g} s in all",
    }
    if state.posts_dropped:
        f["records_agree_with_server"].append(f"{state.posts_dropped} POST records dropped")
    invariants = [
        Invariant(name, not f[name], details[name], tuple(f[name])) for name in _INVARIANTS
    ]
    stats: dict[str, Any] = {
        "calls": n,
        "durationS": round(duration, 3),
        "callsPerS": round(n / duration, 1) if duration > 0 else 0.0,
        "budgetTokensLeft": round(budget_tokens, 1),
        "slowestCallS": round(max((r.seconds for r in results), default=0.0), 3),
        "paths": dict(Counter(r.call.path for r in results).most_common()),
        "tools": dict(Counter(r.call.tool for r in results).most_common()),
        "posts": {
            "all": len(state.posts),
            "toolsCall": tools_call_posts,
            "recorded": checker.recorded_posts,
            "perCall": round(tools_call_posts / n, 4) if n else 0.0,
            "maxPerCall": max(checker.post_hist, default=0),
            "histogram": {str(k): v for k, v in sorted(checker.post_hist.items())},
        },
        "retries": {
            "total": sum(checker.retries.values()),
            "callsRetried": checker.origin_sdk,
            "byReason": dict(checker.retries.most_common()),
        },
        "decisions": dict(checker.decisions.most_common()),
        "outcomes": dict(checker.outcomes.most_common()),
        "client": dict(checker.client.most_common()),
        "read": {
            "transientlyFaulted": checker.read_faulted,
            "recovered": checker.read_recovered,
            "retried": checker.read_retried,
        },
        "charge": {
            "keys": len(charge_calls),
            "executions": sum(checker.executions.values()),
            "maxPerKey": max(per_key, default=0),
            "executionsPerKey": {f"{k}x": v for k, v in sorted(per_key.items())},
        },
        "lookupExecutions": checker.lookup_executions,
        "faults": dict(checker.faults.most_common()),
        "breaker": _breaker_stats(checker),
    }
    return SoakReport(config, stats, invariants)


def _breaker_stats(checker: _Checker) -> dict[str, Any]:
    """Held calls, and the opens and closes the records show per kitchen."""
    servers = {key: _spells(line) for key, line in sorted(checker.timeline.items())}
    return {
        "heldCalls": sum(checker.held.values()),
        "held": dict(checker.held.most_common()),
        "opens": sum(o for o, _ in servers.values()),
        "closes": sum(c for _, c in servers.values()),
        "byServer": {k: {"opens": o, "closes": c} for k, (o, c) in servers.items()},
    }


# -- command line ----------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    defaults = SoakConfig()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=defaults.calls)
    parser.add_argument("--concurrency", type=int, default=defaults.concurrency)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument(
        "--sdk-share",
        type=float,
        default=defaults.sdk_share,
        help="share of calls through the official mcp client (half per era)",
    )
    parser.add_argument("--read-share", type=float, default=defaults.read_share)
    parser.add_argument("--budget-tokens", type=float, default=defaults.budget_tokens)
    parser.add_argument("--budget-ratio", type=float, default=defaults.budget_ratio)
    parser.add_argument(
        "--timeout",
        type=float,
        default=defaults.global_timeout,
        help="seconds the whole run may take",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the soak from the command line; 0 when every invariant held."""
    args = build_parser().parse_args(argv)
    if args.calls < 1 or args.concurrency < 1:
        raise SystemExit("--calls and --concurrency must be at least 1")
    config = SoakConfig(
        calls=args.calls,
        concurrency=args.concurrency,
        seed=args.seed,
        sdk_share=args.sdk_share,
        read_share=args.read_share,
        budget_tokens=args.budget_tokens,
        budget_ratio=args.budget_ratio,
        global_timeout=args.timeout,
    )
    # The last resort: if cancelling and stopping the kitchens hangs, end the process.
    faulthandler.dump_traceback_later(config.global_timeout + 120, exit=True)
    try:
        report = run_soak(config)
    finally:
        faulthandler.cancel_dump_traceback_later()
    print(json.dumps(report.to_json(), indent=2) if args.json else report.render())
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
