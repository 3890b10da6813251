"""The gateway: one upstream MCP server behind the retry transport, for MCP clients in any
language (``mcp-safe-retry gateway --upstream URL``, or ``app(...)`` mounted yourself).

Needs uvicorn to be served from the command line (the ``gateway`` extra); the app itself is
plain ASGI over httpx.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import httpx

from ..core.breaker import Breaker
from ..core.budget import Budget
from ..core.hooks import Hook
from ..core.policy import RetryPolicy
from ..core.records import History
from ._app import DEFAULT_MAX_BODY_BYTES, HEALTH_PATH, METRICS_PATH, Gateway
from ._rules import TOKEN_HEADER

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "HEALTH_PATH",
    "METRICS_PATH",
    "TOKEN_HEADER",
    "Gateway",
    "app",
]


def app(
    upstream: str,
    *,
    policy: RetryPolicy | None = None,
    history: History | None = None,
    hooks: Sequence[Hook] = (),
    budget: Budget | None = None,
    breaker: Breaker | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    upstream_token: str | None = None,
    client_tokens: Sequence[str] = (),
    allowed_hosts: Sequence[str] | None = None,
    allowed_origins: Sequence[str] = (),
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    metrics: Callable[[], bytes] | None = None,
) -> Gateway:
    """The gateway's ASGI app for ``upstream`` (see ``Gateway`` for every argument).

    Example (serve it with any ASGI server; its lifespan closes the connections)::

        import uvicorn
        from mcp_safe_retry import RetryPolicy
        from mcp_safe_retry.gateway import app

        policy = RetryPolicy(tools={"lookup": "read"})
        gateway = app("http://127.0.0.1:8000/mcp", policy=policy,
                      allowed_hosts=["127.0.0.1:9000", "localhost:9000"])
        uvicorn.run(gateway, host="127.0.0.1", port=9000)
    """
    return Gateway(
        upstream,
        policy=policy,
        history=history,
        hooks=hooks,
        budget=budget,
        breaker=breaker,
        transport=transport,
        upstream_token=upstream_token,
        client_tokens=client_tokens,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        max_body_bytes=max_body_bytes,
        metrics=metrics,
    )
