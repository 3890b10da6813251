"""The demo's cases: each one a kitchen scenario, the tool called through it, and what the policy
promises (the outcomes recorded, the POSTs the server sees, the times it runs the tool).
``cli/demo.py`` runs them and prints the table."""

from __future__ import annotations

from typing import Any

import attrs

from ..core.idempotency import Idempotency
from ..core.outcomes import Outcome
from ..core.policy import RetryPolicy

__all__ = ["CASES", "ERA_2025", "ERA_2026", "LOOKUP", "POLICY", "Case"]


ERA_2026 = "2026-07-28"
ERA_2025 = "2025-11-25"
POLICY = RetryPolicy(tools={"lookup": Idempotency.READ})  # charge, approve: UNSAFE
LOOKUP = ("lookup", {"key": "weather:turin"})


@attrs.frozen
class Case:
    """One scenario: what the kitchen does, what is called, and what the policy promises."""

    label: str
    scenario: str
    params: dict[str, Any]
    tool: str
    arguments: dict[str, Any]
    outcomes: tuple[Outcome, ...]  # of the tools/call records, in order
    posts: int  # tools/call POSTs the kitchen may see for this case
    executions: int  # times the kitchen may run the tool
    era: str = ERA_2026
    survives: bool = False  # a second call on the same session must work afterwards
    resend: bool = False  # the application calls the same tool again, as a framework would


def _charge(key: str) -> tuple[str, dict[str, Any]]:
    return "charge", {"key": key, "amount": 4200}


def _cases() -> list[Case]:
    on_call = {"method": "tools/call"}
    ok, http = Outcome.TOOL_SUCCESS, Outcome.HTTP_ERROR
    return [
        Case("baseline", "baseline", {}, *LOOKUP, (ok,), 1, 1),
        Case("baseline", "baseline", {}, *_charge("order-1"), (ok,), 1, 1),
        Case(
            "503 then 200",
            "errors.http_status_sequence",
            {"statusCodes": [200, 503, 200]},
            *LOOKUP,
            (ok,),
            2,
            1,
        ),
        Case(
            "503 then 200",
            "errors.http_status_sequence",
            {"statusCodes": [200, 503, 200]},
            *_charge("order-2"),
            (http,),
            1,
            0,
        ),
        Case(
            "429 Retry-After 1 s", "rate_limit", {"retryAfter": 1, **on_call}, *LOOKUP, (ok,), 2, 1
        ),
        Case(
            "429 Retry-After 1 h",
            "rate_limit",
            {"retryAfter": 3600, **on_call},
            *LOOKUP,
            (http,),
            1,
            0,
        ),
        Case(
            "JSON-RPC error",
            "errors.jsonrpc_error",
            {"code": -32602, "message": "bad key"},
            *LOOKUP,
            (Outcome.JSONRPC_ERROR,),
            1,
            0,
        ),
        Case(
            "tool error", "errors.tool_error", {}, *_charge("order-3"), (Outcome.TOOL_ERROR,), 1, 0
        ),
        Case(
            "input required",
            "elicitation.approval",
            {},
            "approve",
            {"action": "deploy"},
            (Outcome.INPUT_REQUIRED, ok),
            2,
            1,
        ),
        Case("connection drop", "connection_abort", {"when": "before"}, *LOOKUP, (ok,), 2, 1),
        Case(
            "connection drop",
            "connection_abort",
            {"when": "after"},
            *_charge("order-4"),
            (Outcome.NETWORK_ERROR,),
            1,
            1,
            survives=True,
        ),
        # The application calls the charge again, as an agent framework's tool retry does:
        # the first may have run, so the duplicate guard holds the second (0 POSTs).
        Case(
            "drop, app re-sends",
            "connection_abort",
            {"when": "after"},
            *_charge("order-9"),
            (Outcome.NETWORK_ERROR, Outcome.DUPLICATE_HELD),
            1,
            1,
            resend=True,
        ),
        Case("stream cut", "sse_truncated", {"when": "after", "events": 2}, *LOOKUP, (ok,), 2, 2),
        Case(
            "stream cut",
            "sse_truncated",
            {"when": "after", "events": 2},
            *_charge("order-5"),
            (Outcome.STREAM_INCOMPLETE,),
            1,
            1,
            survives=True,
        ),
        Case(
            "invalid JSON",
            "malformed",
            {"kind": "invalid_json"},
            *LOOKUP,
            (Outcome.MALFORMED_JSON,),
            1,
            1,
        ),
        Case("baseline", "baseline", {}, *_charge("order-6"), (ok,), 1, 1, era=ERA_2025),
        Case(
            "503 then 200",
            "errors.http_status_sequence",
            {"statusCodes": [200, 200, 200, 503, 200]},
            *LOOKUP,
            (ok,),
            2,
            1,
            era=ERA_2025,
        ),
        Case(
            "stream cut",
            "sse_truncated",
            {"when": "after", "events": 2},
            *LOOKUP,
            (ok,),
            2,
            2,
            era=ERA_2025,
        ),
        Case(
            "stream cut",
            "sse_truncated",
            {"when": "before", "events": 1},
            *_charge("order-7"),
            (Outcome.STREAM_INCOMPLETE,),
            1,
            0,
            era=ERA_2025,
            survives=True,
        ),
        # A 404 for the session: the server did not process the call, so after one new
        # initialize it is re-sent in the new session, an UNSAFE one too.
        *(
            Case(
                "session expired",
                "session_expired",
                {"afterRequests": 1},
                tool,
                arguments,
                (ok,),
                2,
                1,
                era=ERA_2025,
                survives=survives,
            )
            for (tool, arguments), survives in ((LOOKUP, False), (_charge("order-8"), True))
        ),
    ]


CASES = _cases()
