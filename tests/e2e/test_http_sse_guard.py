"""The HTTP+SSE transport (2024-11-05) end to end: the duplicate guard never holds its calls.

That transport answers every POST ``202 Accepted`` and sends the response on the event stream
the client opened with a GET; the official mcp 2.x ``sse_client`` reads only the POST's
status. A call so answered has its answer (on the stream), so it is not one that may have run
unanswered: were it remembered, the same call made again would be held with an error in the
body of a POST nobody reads, and ``call_tool`` would wait forever (it did: mcp 2.3.0's own
interaction tests hung wrapped, ``test_a_tool_rejected_with_url_elicitation_required_...``).
Against a real ``MCPServer`` SSE app on 127.0.0.1.
"""

from __future__ import annotations

import functools
from collections import Counter

import anyio
import pytest
from mcp.client import Client
from mcp.client.sse import sse_client
from mcp.server import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

from mcp_safe_retry import History
from mcp_safe_retry.httpx2 import mcp_client
from mcp_safe_retry.records import Delivery, Outcome
from tests.serving import Served

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
OPEN = TransportSecuritySettings(enable_dns_rebinding_protection=False)  # loopback only


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the official client is asyncio-based


async def test_the_same_unsafe_call_twice_over_http_sse_runs_twice() -> None:
    runs: Counter[str] = Counter()
    server = MCPServer("sse")

    @server.tool()
    async def charge(key: str) -> str:  # UNSAFE: no policy names it
        runs[key] += 1
        return f"charged {key}"

    history = History()
    factory = functools.partial(mcp_client, history=history)
    with Served(server.sse_app(transport_security=OPEN)) as served:
        url = served.url("/sse")
        with anyio.fail_after(20):  # a held call would never be answered: fail, not hang
            async with Client(sse_client(url, httpx_client_factory=factory)) as client:
                first = await client.call_tool("charge", {"key": "k"})
                second = await client.call_tool("charge", {"key": "k"})  # the same call again
    assert not first.is_error and not second.is_error
    assert runs == {"k": 2}  # both ran: the application asked twice, and each was answered
    charges = [r for r in history.records() if r.method == "tools/call"]
    assert len(charges) == 2
    for record in charges:
        assert record.duplicate_of is None
        (attempt,) = record.attempts
        assert attempt.status == 202 and attempt.classification.outcome is Outcome.INVALID_ENVELOPE
        assert attempt.delivery is Delivery.ANSWERED
