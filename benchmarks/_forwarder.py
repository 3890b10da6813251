"""A plain pass-through forwarder, the gateway's baseline: what any HTTP proxy in front of an
MCP server does and no more (no classification, no records, no retries).

``python -m benchmarks._forwarder UPSTREAM`` serves on 127.0.0.1, port 0, under uvicorn
configured as the gateway's command line configures it (h11, no access log), prints
``PORT <n>`` once listening and serves until its stdin closes. Each request goes to the
upstream's origin at the same path and query with the client's headers (less hop-by-hop ones
and ``Host``), through one ``httpx.AsyncClient``; the answer is relayed chunk by chunk.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
from typing import Any

import httpx
import uvicorn

_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"te", b"upgrade", b"host",
        b"content-length", b"proxy-authorization", b"trailer"}  # fmt: skip


def forwarder(upstream: str) -> Any:
    base = str(httpx.URL(upstream).copy_with(path="/", query=None)).rstrip("/")
    client = httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(), timeout=300)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        query = scope["query_string"].decode()
        url = base + scope["path"] + (f"?{query}" if query else "")
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP]
        request = client.build_request(scope["method"], url, headers=headers, content=body)
        response = await client.send(request, stream=True)
        try:
            out = [(k, v) for k, v in response.headers.raw if k.lower() not in _HOP]
            if "content-length" in response.headers:
                out.append((b"content-length", response.headers["content-length"].encode()))
            await send({"type": "http.response.start", "status": response.status_code,
                        "headers": out})  # fmt: skip
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()

    return app


def main(argv: list[str]) -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # listening before the port is told: a first connect queues, never refused
    config = uvicorn.Config(
        forwarder(argv[0]), http="h11", log_level="warning", access_log=False, lifespan="off"
    )
    server = uvicorn.Server(config)

    def watch_stdin() -> None:  # the parent closes our stdin (or dies): stop
        sys.stdin.read()
        server.should_exit = True

    threading.Thread(target=watch_stdin, daemon=True).start()
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    asyncio.run(server.serve(sockets=[sock]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
