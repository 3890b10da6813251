"""The official SDK's MCPServer on 127.0.0.1, port 0, run by uvicorn in a subprocess.

``python -m benchmarks._mcp_server`` prints ``PORT <n>`` once listening and serves
until its stdin closes (so it never outlives the benchmark that started it). A 2026-07-28
client gets JSON answers; a 2025-11-25 session gets SSE streams, as the SDK sends them
(``json_response=False``; lines end in CRLF). The one tool, ``text(size)``, returns ``size``
characters of text; MCPServer also sends them as ``structuredContent``.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
import threading

import uvicorn
from mcp.server import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette

TEXT = "lorem ipsum dolor sit amet " * ((4 << 20) // 27)


def build_app(port: int) -> Starlette:
    server = MCPServer("bench")

    @server.tool()
    def text(size: int) -> str:
        """Return ``size`` characters of prose."""
        return TEXT[:size]

    host = f"127.0.0.1:{port}"
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[host],
        allowed_origins=[f"http://{host}"],
    )
    return server.streamable_http_app(transport_security=security)


def main(argv: list[str]) -> int:
    logging.disable(logging.INFO)  # the SDK logs every session at INFO
    # proto IPPROTO_TCP, so asyncio sets TCP_NODELAY on accepted connections.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # listening before the port is told: a first connect queues, never refused
    port = sock.getsockname()[1]
    app = build_app(port)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)

    def watch_stdin() -> None:  # the parent closes our stdin (or dies): stop
        sys.stdin.read()
        server.should_exit = True

    threading.Thread(target=watch_stdin, daemon=True).start()
    print(f"PORT {port}", flush=True)
    asyncio.run(server.serve(sockets=[sock]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
