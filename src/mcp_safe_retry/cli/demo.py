"""`mcp-safe-retry demo`: the official MCP client, this transport and the kitchen, case by case
(the cases and their promises: ``cli/demo_cases.py``), with a table a person can read and a
check of every promise the policy makes."""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import attrs

from ..core.attempt_kinds import AttemptKind
from ..core.decision import Reason
from ..core.idempotency import Idempotency
from ..core.records import CallRecord, History
from .demo_cases import CASES, ERA_2025, ERA_2026, LOOKUP, POLICY, Case
from .report import record_row

__all__ = ["run_demo"]

COLUMNS = (
    ("scenario", 20),
    ("era", 4),
    ("call", 14),
    ("idem.", 6),
    ("POSTs", 5),
    ("HTTP", 11),
    ("outcome", 22),
    ("origins", 12),
    ("decision", 20),
    ("runs", 4),
    ("check", 5),
)


@attrs.frozen
class CaseResult:
    case: Case
    records: tuple[CallRecord, ...]  # the tools/call records of the case
    posts: int
    executions: int
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def _line(cells: Sequence[str]) -> str:
    return "  ".join(c.ljust(w) for c, (_, w) in zip(cells, COLUMNS, strict=True)).rstrip()


def _rows(result: CaseResult) -> list[str]:
    case = result.case
    era = "2026" if case.era == ERA_2026 else "2025"
    check = "ok" if result.ok else "FAIL"
    rows = []
    for i, record in enumerate(result.records or (None,)):
        if record is None:
            cells = [case.label, era, case.tool, "", "0", "", "(no call)", "", "", "", check]
        else:
            _, idempotency, posts, statuses, outcome, origins, decision = record_row(record)
            first, last = i == 0, i == len(result.records) - 1
            cells = [
                case.label if first else "",
                era if first else "",
                case.tool,
                idempotency,
                posts,
                statuses,
                outcome,
                origins,
                decision,
                str(result.executions) if last else "",
                check if first else "",
            ]
        rows.append(_line(cells))
    return rows


async def _run_case(case: Case, kitchens: dict[str, Any]) -> CaseResult:
    import anyio
    import mcp_types as types
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    from ..httpx2 import mcp_client

    kitchen = kitchens[case.era]
    url = kitchen.url_for(case.scenario, case.params)
    history = History()

    async def approve(context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"approve": True})

    problems: list[str] = []
    http = mcp_client(policy=POLICY, history=history, scenario=case.label)
    try:
        with anyio.fail_after(30):
            async with (
                http,
                Client(
                    streamable_http_client(url, http_client=http),
                    elicitation_callback=approve,
                    read_timeout_seconds=10,
                ) as client,
            ):
                # The failure itself is what a case shows: the records tell it.
                with contextlib.suppress(Exception):
                    await client.call_tool(case.tool, case.arguments)
                if case.resend:
                    with contextlib.suppress(Exception):
                        await client.call_tool(case.tool, case.arguments)
                if case.survives:
                    again = await client.call_tool(*LOOKUP)
                    if again.is_error:
                        problems.append("the session did not survive")
    except Exception as exc:
        problems.append(f"session failed: {type(exc).__name__}")
    state = kitchen.state_of(url)
    records = tuple(
        r for r in history.records() if r.method == "tools/call" and r.tool == case.tool
    )
    posts = len(state.calls(case.tool))
    executions = state.executions.get(case.tool, 0)
    outcomes = tuple(r.classification.outcome for r in records if r.classification)
    if outcomes != case.outcomes:
        problems.append(f"outcomes {[str(o) for o in outcomes]}")
    if posts != case.posts or sum(r.post_count for r in records) != case.posts:
        problems.append(f"{posts} POSTs")
    if executions != case.executions:
        problems.append(f"{executions} executions")
    if any(not r.complete for r in records):
        problems.append("incomplete record")
    return CaseResult(case, records, posts, executions, tuple(problems))


def _sent_twice(record: CallRecord) -> bool:
    """Whether an UNSAFE call may have reached its tool twice: POSTs the server processed
    (a 404 for a lost session says it did not) beyond the first."""
    processed = [
        a
        for a in record.attempts
        if a.kind == AttemptKind.POST
        and (a.decision is None or a.decision.reason is not Reason.SESSION_LOST)
    ]
    return record.idempotency is Idempotency.UNSAFE and len(processed) > 1


async def run_demo(
    out: TextIO = sys.stdout,
    *,
    as_json: bool = False,
    cases: Sequence[Case] = CASES,
    progress: Callable[[str], None] | None = None,
) -> int:
    """Run every case against a kitchen on loopback; print the table; 0 if all held."""
    from mcp_safe_retry.kitchen import KitchenServer

    say = progress or (lambda line: print(line, file=out, flush=True))
    # The SDK logs each failure it is shown with a traceback; the table says it better.
    logging.getLogger("mcp").setLevel(logging.CRITICAL)
    started = time.monotonic()
    results: list[CaseResult] = []
    with KitchenServer() as modern, KitchenServer(legacy_only=True) as legacy:
        kitchens = {ERA_2026: modern, ERA_2025: legacy}
        if not as_json:
            say(f"kitchen on {modern.base_url} (2026-07-28) and {legacy.base_url} (2025-11-25)")
            say(
                "policy: lookup is READ; charge and approve are UNSAFE (never re-sent once the "
                "server may have run them)\n"
            )
            say(_line([name for name, _ in COLUMNS]))
            say(_line(["-" * w for _, w in COLUMNS]))
        for case in cases:
            result = await _run_case(case, kitchens)
            results.append(result)
            if not as_json:
                for row in _rows(result):
                    say(row)
    failed = [r for r in results if not r.ok]
    resent = [rec for r in results for rec in r.records if _sent_twice(rec)]
    if resent:
        failed = failed or results  # never expected: the invariant is the point of the demo
    if as_json:
        payload = [
            {
                "scenario": r.case.label,
                "era": r.case.era,
                "ok": r.ok,
                "problems": list(r.problems),
                "serverPosts": r.posts,
                "serverExecutions": r.executions,
                "records": [rec.to_dict() for rec in r.records],
            }
            for r in results
        ]
        print(json.dumps(payload, indent=2), file=out)
    else:
        elapsed = time.monotonic() - started
        say(
            "\nruns: how often the kitchen ran the tool. A drop or a cut stream of an UNSAFE\n"
            "call reached the MCP client as a JSON-RPC error (-32010), and the next call on\n"
            "the same session worked; the application's own re-send of the dropped charge\n"
            "was held by the duplicate guard (it may have run). An expired session (404) was\n"
            "re-initialised once and the call re-sent in the new one: the server had not\n"
            "processed it."
        )
        say(
            f"\n{len(results) - len(failed)}/{len(results)} scenarios behaved as the policy "
            f"promises ({elapsed:.1f} s); UNSAFE calls sent twice: {len(resent)}."
        )
        for r in failed:
            say(f"FAIL {r.case.label} {r.case.tool} ({r.case.era}): {'; '.join(r.problems)}")
    return 1 if failed else 0
