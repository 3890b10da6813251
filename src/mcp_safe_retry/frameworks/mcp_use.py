"""mcp-use: ``http_connector(url, factory)``, an ``HttpConnector`` that sends through your client.

mcp-use 1.7 has no public way to give an HTTP connection a client or a client factory: every
``HttpConnector`` builds its own (``HttpConnector._build_httpx_factory``), and
``MCPClient.from_dict`` configurations build ``HttpConnector``s. This module overrides that one
private method and nothing else; the connector is otherwise mcp-use's own (streamable HTTP,
then SSE, auth, middleware, reconnection). If mcp-use renames the method, building the
connector fails at once instead of silently sending around the retry transport.

Use the connector wherever mcp-use takes one: ``MCPSession(connector)``,
``LangChainAdapter().load_tools_for_connector(connector)``,
``MCPAgent(llm=..., connectors=[connector])``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

OVERRIDDEN = "_build_httpx_factory"


def http_connector(url: str, httpx_client_factory: Callable[..., Any], **options: Any) -> Any:
    """Return an mcp-use ``HttpConnector`` whose HTTP clients come from `httpx_client_factory`.

    Args:
        url: the server's MCP endpoint.
        httpx_client_factory: called by mcp-use with ``headers``, ``timeout`` and ``auth``
            for every connection, e.g. ``functools.partial(mcp_client, policy=...,
            history=...)`` (``mcp_safe_retry.mcp_client``: mcp-use pins mcp 1.x, httpx).
            ``verify`` and other connection settings go to it, not to the connector.
        options: the other ``HttpConnector`` arguments (headers, timeout, auth, middleware,
            callbacks, ...).

    Raises:
        TypeError: for ``verify``, which mcp-use gives only to the client it builds itself.
        RuntimeError: if the installed mcp-use no longer builds its client in
            ``HttpConnector._build_httpx_factory``.
    """
    if "verify" in options:
        raise TypeError(
            "http_connector: give verify= to the client factory (mcp_client(verify=...)); "
            "the connector would pass it only to the client it no longer builds"
        )
    return _connector_class()(url, httpx_client_factory, **options)


def _connector_class() -> type[Any]:
    """mcp-use's ``HttpConnector`` with its client builder replaced (read afresh each time)."""
    connectors = importlib.import_module("mcp_use.client.connectors")
    base = connectors.HttpConnector
    if not hasattr(base, OVERRIDDEN):
        raise RuntimeError(
            f"this mcp-use has no HttpConnector.{OVERRIDDEN}: mcp_safe_retry.frameworks.mcp_use "
            "cannot put its client under the connector (tested with mcp-use 1.7.1)"
        )

    class RetryHttpConnector(base):  # type: ignore[misc,valid-type]
        """mcp-use's ``HttpConnector``, with HTTP clients from the user's factory."""

        def __init__(
            self, base_url: str, httpx_client_factory: Callable[..., Any], **options: Any
        ) -> None:
            super().__init__(base_url, **options)
            self.httpx_client_factory = httpx_client_factory

        def _build_httpx_factory(self) -> Callable[..., Any]:
            return self.httpx_client_factory

    return RetryHttpConnector
