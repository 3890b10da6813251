"""`mcp-safe-retry probe`: one tool call against any server through the official SDK, then
what the server answered and the record of every JSON-RPC call it took."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TextIO

from ..core.idempotency import Idempotency
from ..core.outcomes import Outcome
from ..core.policy import RetryPolicy
from ..core.records import CallRecord, History
from .report import Paint, format_table, record_row

__all__ = ["ProbeResult", "probe"]

ATTEMPT_HEADERS = ("#", "kind", "sent at (UTC)", "HTTP", "outcome", "decision", "delivery")


def iso(epoch: float | None) -> str:
    """Unix time as an ISO 8601 time of day, to the millisecond (UTC)."""
    if epoch is None:
        return "-"
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


class ProbeResult:
    """What a probe saw: the records of every JSON-RPC call, the answer, how the call ended."""

    def __init__(
        self,
        records: list[CallRecord],
        result: Any,
        error: str | None,
        server_said: list[str] | None = None,
    ) -> None:
        self.records = records
        self.result = result
        self.error = error
        self.server_said = server_said or []

    @property
    def tool_record(self) -> CallRecord | None:
        calls = [r for r in self.records if r.method == "tools/call"]
        return calls[-1] if calls else None

    @property
    def answer(self) -> str | None:
        """The tool's text content, as the server sent it."""
        if not isinstance(self.result, dict):
            return None
        texts = [c.get("text", "") for c in self.result.get("content", []) if isinstance(c, dict)]
        return "\n".join(t for t in texts if t) or json.dumps(self.result.get("content"))

    @property
    def ok(self) -> bool:
        """Whether the tool ran and answered a success, at every layer."""
        record = self.tool_record
        return (
            self.error is None
            and isinstance(self.result, dict)
            and not self.result.get("isError", False)
            and record is not None
            and record.classification is not None
            and record.classification.outcome is Outcome.TOOL_SUCCESS
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "result": self.result,
            "error": self.error,
            "serverSaid": self.server_said,
            "records": [r.to_dict() for r in self.records],
        }

    def as_text(self, paint: Paint | None = None) -> str:
        paint = paint or Paint(False)
        lines = [format_table((record_row(r) for r in self.records), paint=paint)]
        record = self.tool_record
        if record is not None:
            lines.append(f"\nattempts of {record.method} {record.tool}:")
            rows = [
                (
                    str(a.number),
                    str(a.kind),
                    iso(record.started_at + a.elapsed),
                    str(a.status) if a.status else "-",
                    str(a.classification.outcome) if a.classification else "-",
                    f"{a.decision.action} ({a.decision.reason})" if a.decision else "-",
                    str(a.delivery) if a.delivery else "-",
                )
                for a in record.attempts
            ]
            lines.append(format_table(rows, ATTEMPT_HEADERS, paint=paint, outcome_column=4))
        answer = self.answer
        if answer is not None:
            failed = bool(self.result.get("isError"))
            label = "the tool reported an error" if failed else "the tool answered"
            lines.append(f"\n{paint.outcome(label, ok=not failed)}:")
            lines.append(answer)
        for said in self.server_said:
            lines.append(f"\nthe server said: {said}")
        if self.error:
            lines.append(f"\n{paint.outcome('error', ok=False)}: {self.error}")
        return "\n".join(lines)


def _server_text(body: bytes) -> str:
    """The message an error answer carries: its JSON ``error`` (or its ``message``), else
    its text, cut short."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:500]
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return text[:500]


async def probe(
    url: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    read: bool = False,
    headers: dict[str, str] | None = None,
    timeout: float = 30.0,
    progress: Callable[[str], None] | None = None,
) -> ProbeResult:
    """Connect with the official ``mcp`` 2.x client over the httpx2 transport and call a tool.

    Args:
        url: the server's Streamable HTTP endpoint.
        tool: the tool's name.
        arguments: the tool's arguments.
        read: declare the tool READ, so transport failures are retried.
        headers: extra headers (e.g. Authorization).
        timeout: seconds for the whole call (connecting, the handshake, the answer).
        progress: told, about once a second, what the probe is waiting for and how long.
    """
    import anyio
    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    from ..httpx2 import mcp_client

    policy = RetryPolicy(tools={tool: Idempotency.READ} if read else {})
    history = History()
    server_said: list[str] = []

    async def keep_error_text(response: httpx2.Response) -> None:
        if response.status_code >= 400:
            await response.aread()
            said = _server_text(response.content)
            if said and f"HTTP {response.status_code}: {said}" not in server_said:
                server_said.append(f"HTTP {response.status_code}: {said}")

    http = mcp_client(
        policy=policy,
        history=history,
        headers=headers,
        timeout=httpx2.Timeout(timeout),
        event_hooks={"response": [keep_error_text]},
        scenario="probe",
    )
    result: Any = None
    error: str | None = None
    started = time.monotonic()
    waiting = ["a connection and the handshake"]

    async def tell() -> None:
        while progress is not None:
            await anyio.sleep(1.0)
            spent = time.monotonic() - started
            progress(f"waiting for {waiting[0]}: {spent:.0f} s of {timeout:g} s")

    try:
        with anyio.fail_after(timeout):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(tell)
                try:
                    async with (
                        http,
                        Client(streamable_http_client(url, http_client=http)) as client,
                    ):
                        waiting[0] = f"the answer to tools/call {tool}"
                        called = await client.call_tool(tool, arguments)
                        result = called.model_dump(mode="json", by_alias=True, exclude_none=True)
                finally:
                    tasks.cancel_scope.cancel()
    except TimeoutError:
        error = f"no answer within {timeout:g} s (the --timeout): still waiting for {waiting[0]}"
    except Exception as exc:  # a probe reports every failure; the SDK may group them
        error = "; ".join(f"{type(e).__name__}: {e}" for e in _leaves(exc))
    return ProbeResult(history.records(), result, error, server_said)


def stderr_progress(out: TextIO | None = None) -> Callable[[str], None]:
    """Progress lines on ``out`` (standard error): rewritten in place on a terminal, one per
    5 s otherwise."""
    out = out if out is not None else sys.stderr
    tty = out.isatty()
    count = [0]

    def say(line: str) -> None:
        count[0] += 1
        if tty:
            print(f"\r{line}\033[K", end="", file=out, flush=True)
        elif count[0] % 5 == 1:
            print(line, file=out, flush=True)

    return say


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]
