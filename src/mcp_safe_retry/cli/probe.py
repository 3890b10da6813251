"""`mcp-safe-retry probe`: one tool call against any server through the official SDK, then
its whole attempt history and diagnostic records."""

from __future__ import annotations

import json
from typing import Any

from ..core.idempotency import Idempotency
from ..core.policy import RetryPolicy
from ..core.records import CallRecord, History
from .report import format_table, record_row

__all__ = ["ProbeResult", "probe"]


class ProbeResult:
    """What a probe saw: the records of every JSON-RPC call, and how the tool call ended."""

    def __init__(self, records: list[CallRecord], result: Any, error: str | None) -> None:
        self.records = records
        self.result = result
        self.error = error

    @property
    def tool_record(self) -> CallRecord | None:
        calls = [r for r in self.records if r.method == "tools/call"]
        return calls[-1] if calls else None

    def as_json(self) -> dict[str, Any]:
        return {
            "records": [r.to_dict() for r in self.records],
            "result": self.result,
            "error": self.error,
        }

    def as_text(self) -> str:
        lines = [format_table(record_row(r) for r in self.records)]
        if self.error:
            lines.append(f"\nerror: {self.error}")
        record = self.tool_record
        if record is not None:
            lines.append("\ndiagnostic record of the tool call:")
            lines.append(json.dumps(record.to_dict(), indent=2))
        return "\n".join(lines)


async def probe(
    url: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    read: bool = False,
    headers: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> ProbeResult:
    """Connect with the official ``mcp`` 2.x client over the httpx2 transport and call a tool.

    Args:
        url: the server's Streamable HTTP endpoint.
        tool: the tool's name.
        arguments: the tool's arguments.
        read: declare the tool READ, so transport failures are retried.
        headers: extra headers (e.g. Authorization).
        timeout: seconds for connect/write; reads get ten times as long.
    """
    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    from ..httpx2 import mcp_client

    policy = RetryPolicy(tools={tool: Idempotency.READ} if read else {})
    history = History()
    http = mcp_client(
        policy=policy,
        history=history,
        headers=headers,
        timeout=httpx2.Timeout(timeout, read=timeout * 10),
        scenario="probe",
    )
    result: Any = None
    error: str | None = None
    try:
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            called = await client.call_tool(tool, arguments)
            result = called.model_dump(mode="json", exclude_none=True)
    except Exception as exc:  # a probe reports every failure; the SDK may group them
        error = "; ".join(f"{type(e).__name__}: {e}" for e in _leaves(exc))
    return ProbeResult(history.records(), result, error)


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]
