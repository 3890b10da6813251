"""strands-agents: ``MCPClient(streamable_http(url, factory))``.

strands builds the HTTP client of ``MCPClient(url=...)`` itself and takes no client or factory
there. Its public seam is ``MCPClient(transport_callable)``: a callable that opens an MCP
transport. `streamable_http` is that callable: the official SDK's Streamable HTTP client over a
client your factory makes. Nothing here imports strands.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from importlib.metadata import version
from typing import Any

# The HTTP library each major version of the official SDK sends through, and our client for it.
_CLIENTS = {
    1: ("httpx", "mcp_safe_retry.mcp_client"),
    2: ("httpx2", "mcp_safe_retry.httpx2.mcp_client"),
}


def streamable_http(
    url: str, httpx_client_factory: Callable[[], Any]
) -> Callable[[], AbstractAsyncContextManager[Any]]:
    """Return a ``transport_callable`` for strands' ``MCPClient`` that sends through your client.

    Args:
        url: the server's MCP endpoint.
        httpx_client_factory: called with no arguments each time strands opens the transport,
            e.g. ``functools.partial(mcp_client, policy=..., history=...)`` with the
            ``mcp_client`` of the HTTP library the installed ``mcp`` uses
            (``mcp_safe_retry.httpx2`` for mcp 2.x, which strands 1.62 installs;
            ``mcp_safe_retry`` for mcp 1.x). The client is closed with the transport.

    Returns:
        A callable opening the transport; each call makes a new client.

    Raises:
        TypeError: when the transport opens, if the factory made a client of the other
            HTTP library (the SDK would not recognise that library's errors).
    """

    @asynccontextmanager
    async def open_transport() -> AsyncIterator[Any]:
        from mcp.client.streamable_http import streamable_http_client

        async with httpx_client_factory() as http:
            _check_library(http)
            async with streamable_http_client(url, http_client=http) as streams:
                yield streams

    return open_transport


def _check_library(http: object) -> None:
    """Refuse a client of the HTTP library the installed ``mcp`` does not send through."""
    sdk = version("mcp")
    library, factory = _CLIENTS[2 if int(sdk.split(".")[0]) >= 2 else 1]
    made = type(http).__module__.partition(".")[0]
    if made != library:
        raise TypeError(
            f"mcp {sdk} sends through an {library}.AsyncClient, but the factory made a "
            f"{made}.{type(http).__qualname__}: use {factory}"
        )
