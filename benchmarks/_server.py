"""A minimal MCP-shaped ASGI server on 127.0.0.1, port 0, run by uvicorn in a subprocess.

``python -m benchmarks._server`` prints ``PORT <n>`` once listening and serves until its
stdin closes (so it never outlives the benchmark that started it). ``POST /mcp/<case>``
answers with the case's prebuilt body: ``json-1k``, ``json-64k``, ``sse-1k`` or ``sse-1m``
(SSE without a Content-Length, as MCP servers stream it).
"""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
from typing import Any

import uvicorn

from ._payloads import CHUNK, json_response, sse_chunks, sse_stream

BODIES: dict[str, tuple[bytes, list[bytes]]] = {
    "json-1k": (b"application/json", [json_response(1024)]),
    "json-64k": (b"application/json", [json_response(65536)]),
    "sse-1k": (b"text/event-stream", sse_chunks(sse_stream(1024), CHUNK)),
    "sse-1m": (b"text/event-stream", sse_chunks(sse_stream(1 << 20), CHUNK)),
}


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    more = True
    while more:  # read (and drop) the request body
        message = await receive()
        more = message.get("more_body", False)
    case = scope["path"].rsplit("/", 1)[-1]
    if case not in BODIES:
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    content_type, chunks = BODIES[case]
    headers = [(b"content-type", content_type)]
    if content_type == b"application/json":
        headers.append((b"content-length", str(len(chunks[0])).encode()))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    for i, chunk in enumerate(chunks):
        await send({"type": "http.response.body", "body": chunk, "more_body": i < len(chunks) - 1})


def main() -> int:
    # proto IPPROTO_TCP, so asyncio sets TCP_NODELAY on accepted connections (it checks the
    # proto); with proto 0 a response's head and body writes stall ~40 ms on delayed ACKs.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # listening before the port is told: a first connect queues, never refused
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)

    def watch_stdin() -> None:  # the parent closes our stdin (or dies): stop
        sys.stdin.read()
        server.should_exit = True

    threading.Thread(target=watch_stdin, daemon=True).start()
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    asyncio.run(server.serve(sockets=[sock]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
