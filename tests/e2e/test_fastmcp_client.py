"""fastmcp 4.x's client over httpx2 with `mcp_safe_retry.httpx2.mcp_client`, against the kitchen.

fastmcp builds its HTTP client through a factory it calls with the client's own keywords
(`headers`, `auth`, `follow_redirects`, sometimes `timeout`), so `mcp_client` must sort
them from the retry transport's options.
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp.shared.exceptions import MCPError

from mcp_safe_retry import History, Idempotency, RetryPolicy
from mcp_safe_retry.httpx2 import mcp_client
from mcp_safe_retry.kitchen import KitchenServer
from mcp_safe_retry.records import Outcome, Reason, RetryOrigin

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
README = Path(__file__).resolve().parents[2] / "docs" / "sdks.md"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # fastmcp's client runs the official SDK, which is asyncio-based


@pytest.fixture(params=["2026", "2025"], scope="module")
def kitchen(request: pytest.FixtureRequest) -> Iterator[KitchenServer]:
    with KitchenServer(legacy_only=request.param == "2025") as server:
        yield server


def calls(history: History, tool: str) -> list[Any]:
    return [r for r in history.records() if r.method == "tools/call" and r.tool == tool]


async def test_read_retried_after_503_unsafe_not_records_complete(kitchen: KitchenServer) -> None:
    history = History()
    policy = RetryPolicy(tools={"lookup": Idempotency.READ}, initial_backoff=0.001)
    # Only tools/call POSTs count: lookup gets 503 then 200, charge gets 503.
    codes = {"statusCodes": [503, 200, 503, 200], "method": "tools/call"}
    url = kitchen.url_for("errors.http_status_sequence", codes)
    factory = functools.partial(mcp_client, policy=policy, history=history)
    with anyio.fail_after(20):
        async with Client(StreamableHttpTransport(url, httpx_client_factory=factory)) as client:
            looked_up = await client.call_tool("lookup", {"key": "a"})
            with pytest.raises(MCPError):  # the 503 is the answer: charge is UNSAFE
                await client.call_tool("charge", {"key": "c", "amount": 1})
            again = await client.call_tool("lookup", {"key": "b"})  # the session lives on
    assert not looked_up.is_error and not again.is_error
    lookup, second = calls(history, "lookup")
    assert lookup.http_statuses == (503, 200)
    assert [a.retry_origin for a in lookup.attempts] == [RetryOrigin.NONE, RetryOrigin.SDK]
    assert lookup.attempts[0].decision.reason is Reason.RETRYABLE_STATUS  # type: ignore[union-attr]
    (charge,) = calls(history, "charge")
    assert charge.http_statuses == (503,)
    assert charge.attempts[0].decision.reason is Reason.NOT_IDEMPOTENT  # type: ignore[union-attr]
    assert charge.classification is not None
    assert charge.classification.outcome is Outcome.HTTP_ERROR
    assert all(r.complete for r in history.records())
    state = kitchen.state_of(url)
    assert state.executions == {"lookup": 2}
    assert len(state.calls("charge")) == 1  # POSTed once, never re-sent
    assert second.http_statuses == (200,)


async def test_the_factory_takes_every_keyword_fastmcp_passes(kitchen: KitchenServer) -> None:
    history = History()
    seen: list[str] = []

    async def hook(request: httpx2.Request) -> None:
        seen.append(request.headers.get("x-trace", ""))

    factory = functools.partial(
        mcp_client, history=history, event_hooks={"request": [hook]}, max_redirects=3
    )
    transport = StreamableHttpTransport(
        kitchen.url_for("baseline"),
        headers={"X-Trace": "fastmcp"},
        auth="token",
        httpx_client_factory=factory,
    )
    # What fastmcp's connect_session passes, a read timeout included.
    http = factory(
        headers={"X-Trace": "fastmcp"},
        auth=None,
        follow_redirects=True,
        timeout=httpx2.Timeout(30.0, read=400.0),
    )
    async with http:
        assert http.follow_redirects and http.max_redirects == 3
        assert http.timeout.read == 400.0
    with anyio.fail_after(20):
        async with Client(transport) as client:
            await client.call_tool("lookup", {"key": "k"})
    assert seen and set(seen) == {"fastmcp"}
    assert calls(history, "lookup")[0].classification.outcome is Outcome.TOOL_SUCCESS


def _readme_block(marker: str) -> str:
    """The README's python code block that contains ``marker``."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    (block,) = [b for b in blocks if marker in b]
    return str(block)


def test_readme_fastmcp_snippet_runs_as_pasted() -> None:
    with KitchenServer() as kitchen:
        url = kitchen.url_for(
            "errors.http_status_sequence", {"statusCodes": [503, 200], "method": "tools/call"}
        )
        code = _readme_block("StreamableHttpTransport")
        assert 'URL = "http://127.0.0.1:8000/mcp"' in code
        code = code.replace('URL = "http://127.0.0.1:8000/mcp"', f"URL = {url!r}")
        namespace: dict[str, Any] = {"__name__": "readme"}
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, "docs/sdks.md", "exec"), namespace)
        history: History = namespace["history"]
        (lookup,) = calls(history, "lookup")
        assert lookup.http_statuses == (503, 200)
        assert "tools/call lookup (503, 200) TOOL_SUCCESS" in printed.getvalue()
        assert kitchen.state_of(url).executions == {"lookup": 1}
