"""What the call-ledger end-to-end tests share (issue 27): the kitchen runs they call, one
HTTP client over one retry transport of each flavour (httpx and httpx2, sync and async) as
an application builds it, and the checks every case makes.

The kitchen's ``charge`` counts its runs per ``key``: ``runs_of`` reads them, and every case
asserts that count first, so a case that fails says "charge ran 2 times".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import httpx
import httpx2

import mcp_safe_retry
from mcp_safe_retry import History, Idempotency, RetryPolicy, RetryTransport, get_record
from mcp_safe_retry import httpx2 as flavour2
from mcp_safe_retry.kitchen import KitchenServer
from mcp_safe_retry.records import CONTAINED_ERROR_CODE

MODERN = "2026-07-28"
ACCEPT = "application/json, text/event-stream"
POLICY = RetryPolicy(tools={"lookup": Idempotency.READ}, initial_backoff=0.001)
FLAVOURS = ("httpx-sync", "httpx-async", "httpx2-sync", "httpx2-async")
ABORT_AFTER = ("connection_abort", {"when": "after", "tool": "charge"})  # it ran, then the drop
SLOW_S = 1.2  # a slow charge: the kitchen holds its POST this long, then runs it
SLOW = ("baseline", {"delayMs": int(SLOW_S * 1000), "tool": "charge"})
GIVE_UP_S = 0.3  # the caller stops waiting this soon (well before the slow charge runs)
TIMEOUT = 20.0  # every case ends within this, or fails


def own_ledger() -> Any:
    """An explicit ledger for the one stack a test is about (``ledger=``)."""
    return mcp_safe_retry.CallLedger()


def runs_of(kitchen: KitchenServer, url: str, key: str) -> int:
    """How many times ``charge`` ran for ``key`` in the run ``url`` selects."""
    return kitchen.state_of(url).executions_by_key.get("charge", {}).get(key, 0)


def assert_ran(kitchen: KitchenServer, url: str, key: str, times: int = 1) -> None:
    """``charge`` ran ``times`` for ``key``: the first thing every case checks."""
    runs = runs_of(kitchen, url, key)
    assert runs == times, f"the tool ran {runs} times (expected {times})"


async def wait_for_runs(kitchen: KitchenServer, url: str, key: str, times: int) -> None:
    """Wait (bounded) until ``charge`` ran ``times`` for ``key``: a slow one finishing."""
    with anyio.move_on_after(SLOW_S * 3):
        while runs_of(kitchen, url, key) < times:
            await anyio.sleep(0.02)


def modern_call(request_id: int | str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 ``tools/call`` body (no handshake needed in that era)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": tool, "arguments": arguments, "_meta": meta}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def modern_headers(tool: str) -> dict[str, str]:
    """The headers a 2026-07-28 client sends with a ``tools/call``."""
    return {
        "accept": ACCEPT,
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": tool,
    }


Answer = dict[str, Any] | Exception
"""A call's JSON-RPC answer, or the error the client raised."""


class Stack:
    """One HTTP client over one retry transport of ``flavour``, as an application builds
    it; ``call`` posts a 2026-07-28 ``tools/call`` (a sync client's post runs in a worker
    thread, as a framework runs a sync tool)."""

    def __init__(
        self,
        flavour: str,
        *,
        contain: bool,
        history: History | None = None,
        ledger: Any = None,
        policy: RetryPolicy = POLICY,
    ) -> None:
        self.flavour = flavour
        self.history = history if history is not None else History()
        options: dict[str, Any] = {
            "policy": policy,
            "history": self.history,
            "contain_failures": contain,
        }
        if ledger is not None:
            options["ledger"] = ledger
        self.sync = flavour.endswith("-sync")
        self.client: Any
        if flavour == "httpx-sync":
            self.client = httpx.Client(transport=RetryTransport(httpx.HTTPTransport(), **options))
        elif flavour == "httpx-async":
            inner = httpx.AsyncHTTPTransport()
            transport = mcp_safe_retry.AsyncRetryTransport(inner, **options)
            self.client = httpx.AsyncClient(transport=transport)
        elif flavour == "httpx2-sync":
            sync2 = flavour2.RetryTransport(httpx2.HTTPTransport(), **options)
            self.client = httpx2.Client(transport=sync2)
        else:
            async2 = flavour2.AsyncRetryTransport(httpx2.AsyncHTTPTransport(), **options)
            self.client = httpx2.AsyncClient(transport=async2)

    async def call(
        self, url: str, request_id: int | str, arguments: dict[str, Any], tool: str = "charge"
    ) -> Answer:
        """Post one ``tools/call``; its JSON-RPC answer, or what the client raised.

        A caller that stops waiting (its scope cancelled) abandons a sync post to its
        thread, which goes on: the request stays in flight, as under a framework's timeout.
        """
        body = modern_call(request_id, tool, arguments)
        headers = modern_headers(tool)
        try:
            if self.sync:
                post: Callable[[], Any] = lambda: self.client.post(url, json=body, headers=headers)  # noqa: E731
                response = await anyio.to_thread.run_sync(post, abandon_on_cancel=True)
            else:
                response = await self.client.post(url, json=body, headers=headers)
        except (httpx.TransportError, httpx2.TransportError) as exc:
            return exc
        answer: dict[str, Any] = response.json()
        return answer

    async def aclose(self) -> None:
        if self.sync:
            self.client.close()
        else:
            await self.client.aclose()


def outcome_of(answer: Answer) -> str | None:
    """The outcome a held or failed call reports: a contained error's ``data.outcome``,
    or the raised error's record's; None for a result."""
    if isinstance(answer, Exception):
        record = get_record(answer)
        return str(record.outcome) if record is not None else type(answer).__name__
    error = answer.get("error")
    if error is None:
        return None
    assert error["code"] == CONTAINED_ERROR_CODE, error
    return str(error["data"]["outcome"])


def duplicate_of(answer: Answer) -> dict[str, Any]:
    """The first call a held call names (``data.duplicateOf`` of the contained error, or
    the raised error's record's ``duplicate_of``)."""
    if isinstance(answer, Exception):
        record = get_record(answer)
        assert record is not None and record.duplicate_of is not None, repr(answer)
        named: dict[str, Any] = record.duplicate_of.to_dict()
        return named
    earlier: dict[str, Any] = answer["error"]["data"]["duplicateOf"]
    return earlier


def is_held(answer: Answer) -> bool:
    """A held call: raised as ``DuplicateCallError`` or contained as its outcome."""
    if isinstance(answer, Exception):
        return isinstance(answer, mcp_safe_retry.DuplicateCallError)
    return outcome_of(answer) in {"DUPLICATE_HELD", "DUPLICATE_IN_FLIGHT"}


def charged(answer: Answer) -> dict[str, Any]:
    """The charge a successful call reports (its structured content)."""
    assert isinstance(answer, dict) and "result" in answer, answer
    result = answer["result"]
    assert not result.get("isError"), result
    content: dict[str, Any] = result["structuredContent"]
    return content
