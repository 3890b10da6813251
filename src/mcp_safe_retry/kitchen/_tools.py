"""The kitchen's real MCP server: tools with honest annotations that count their executions."""

from __future__ import annotations

import hashlib
from typing import Annotated, Any

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    Resolve,
)
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from mcp_safe_retry.kitchen._book import KitchenBook

RUN_SCOPE_KEY = "mcp_safe_retry.kitchen.run"
"""ASGI scope key where the fault layer leaves the run a request belongs to."""

SERVER_NAME = "mcp-safe-retry-kitchen"
MAX_SLOW_DELAY_MS = 60_000
_SLOW_PROGRESS_STEPS = 4

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# Charging is additive, not destructive, and a second call charges again: not idempotent.
SIDE_EFFECT = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)


class Approval(BaseModel):
    """The elicitation form the `approve` tool shows the user."""

    approve: bool = Field(description="Approve the action?")


async def ask_approval(action: str) -> Elicit[Approval]:
    """Ask the user to approve `action` (MRTR on 2026-07-28, `elicitation/create` before)."""
    return Elicit(f"Approve this action: {action}?", Approval)


def run_of(ctx: Context) -> str:
    """Return the kitchen run of the HTTP request that carried this tool call."""
    request: Any = ctx.request_context.request
    scope = getattr(request, "scope", None)
    if isinstance(scope, dict):
        return str(scope.get(RUN_SCOPE_KEY, ""))
    return ""


def build_mcp_server(book: KitchenBook) -> MCPServer:
    """Build the SDK server whose tools record every execution in `book`.

    Args:
        book: Where executions are counted, per run, tool and caller-given key.

    Returns:
        An `MCPServer` with the tools `lookup`, `charge`, `slow` and `approve`.
    """
    server: MCPServer = MCPServer(
        SERVER_NAME,
        instructions="Fault-injection server of mcp-safe-retry. Select faults per URL query.",
        version="0.1.0",
        # INFO would make the SDK configure root logging when the host has not.
        log_level="WARNING",
    )

    @server.tool(annotations=READ_ONLY)
    async def lookup(key: str, ctx: Context) -> dict[str, str]:
        """Return a deterministic value for `key`; reads only, safe to repeat."""
        book.record_execution(run_of(ctx), "lookup", key)
        return {"key": key, "value": hashlib.sha256(key.encode()).hexdigest()[:16]}

    @server.tool(annotations=SIDE_EFFECT)
    async def charge(key: str, amount: int, ctx: Context) -> dict[str, Any]:
        """Charge `amount` cents for order `key`; every call charges again (counted per key)."""
        execution = book.record_execution(run_of(ctx), "charge", key)
        return {
            "key": key,
            "amount": amount,
            "execution": execution,
            "chargeId": f"ch_{key}_{execution}",
        }

    @server.tool(annotations=READ_ONLY)
    async def slow(ctx: Context, delay_ms: int = 100, key: str | None = None) -> dict[str, Any]:
        """Wait `delay_ms` then answer; reports progress when the caller sent a progressToken."""
        if not 0 <= delay_ms <= MAX_SLOW_DELAY_MS:
            raise ToolError(f"delay_ms must be within 0..{MAX_SLOW_DELAY_MS}")
        # Progress notifications make the SDK answer with SSE even on 2026-07-28.
        for step in range(_SLOW_PROGRESS_STEPS):
            await ctx.report_progress(step, _SLOW_PROGRESS_STEPS)
            await anyio.sleep(delay_ms / 1000 / _SLOW_PROGRESS_STEPS)
        await ctx.report_progress(_SLOW_PROGRESS_STEPS, _SLOW_PROGRESS_STEPS)
        book.record_execution(run_of(ctx), "slow", key)
        return {"delayMs": delay_ms, "key": key}

    @server.tool(annotations=SIDE_EFFECT)
    async def approve(
        action: str,
        decision: Annotated[ElicitationResult[Approval], Resolve(ask_approval)],
        ctx: Context,
        key: str | None = None,
    ) -> dict[str, Any]:
        """Perform `action` once the user approves it through an elicitation form."""
        approved = isinstance(decision, AcceptedElicitation) and decision.data.approve
        if approved:
            book.record_execution(run_of(ctx), "approve", key)
        return {"action": action, "approved": approved, "decision": decision.action}

    return server
