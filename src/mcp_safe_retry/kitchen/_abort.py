"""Dropping a client connection on purpose, which ASGI itself cannot express.

An ASGI app can only send messages; an exception before `http.response.start` makes
uvicorn answer 500, not drop. So the kitchen serves with a subclass of uvicorn's h11
protocol that hands each request an `abort` callable in `scope["extensions"]`, closing
the request's own TCP connection with a FIN (`close`) or an RST (`reset`).
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Awaitable, Callable
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

ABORT_EXTENSION = "mcp_safe_retry.kitchen.abort"
"""Key in `scope["extensions"]` of the connection-dropping callable."""

AbortFn = Callable[[bool], Awaitable[None]]
"""`await abort(reset)`: drop the connection (RST when `reset`), return once it is gone."""

_LOST_TIMEOUT_S = 5.0
_LINGER_RESET = struct.pack("ii", 1, 0)


class AbortableH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, plus a per-connection abort handed to the app."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Wrap the app so each request's scope carries this connection's abort."""
        super().__init__(*args, **kwargs)
        self._lost = asyncio.Event()
        inner = self.app

        async def app_with_abort(scope: Any, receive: Any, send: Any) -> None:
            scope.setdefault("extensions", {})[ABORT_EXTENSION] = self._abort
            await inner(scope, receive, send)

        self.app = app_with_abort

    def connection_lost(self, exc: Exception | None) -> None:
        """Note the loss so a pending abort can return."""
        super().connection_lost(exc)
        self._lost.set()

    async def _abort(self, reset: bool) -> None:
        transport = self.transport
        if reset:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                # Linger 0 turns close() into an RST: the peer sees ECONNRESET.
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
            transport.abort()
        else:
            # close() flushes what was already written, then sends FIN.
            transport.close()
        # Return only once uvicorn marked the cycle disconnected, so it neither logs
        # "returned without starting response" nor tries to answer 500.
        await asyncio.wait_for(self._lost.wait(), _LOST_TIMEOUT_S)
