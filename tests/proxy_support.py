"""A real forward HTTP proxy and a scripted MCP endpoint, both on 127.0.0.1, in threads.

The proxy takes absolute-URI requests (``POST http://127.0.0.1:PORT/mcp HTTP/1.1``, what an
HTTP client sends to a proxy for an ``http://`` URL), forwards each to its origin over a new
connection and relays the whole answer back; it counts what it forwarded. Each server is
stopped by its own ``shutdown`` when the ``with`` block ends.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "content-length",
    }
)


class _Served:
    """A ThreadingHTTPServer on 127.0.0.1:0, served in a thread while in a ``with`` block."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as clients use proxies

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def answer(self, status: int, headers: Sequence[tuple[str, str]], body: bytes) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class ForwardProxy(_Served):
    """A forward proxy: ``forwarded`` lists ``(method, absolute URL)`` of every request."""

    def __init__(self) -> None:
        self.forwarded: list[tuple[str, str]] = []
        proxy = self

        class Forward(_Handler):
            def forward(self) -> None:
                target = urlsplit(self.path)
                if target.scheme != "http" or not target.hostname:
                    self.answer(400, [], b"absolute-URI requests only")
                    return
                body = self.body()
                proxy.forwarded.append((self.command, self.path))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                origin = http.client.HTTPConnection(target.hostname, target.port, timeout=10)
                try:
                    path = target.path + (f"?{target.query}" if target.query else "")
                    origin.request(self.command, path or "/", body=body, headers=headers)
                    reply = origin.getresponse()
                    content = reply.read()
                    kept = [(k, v) for k, v in reply.getheaders() if k.lower() not in HOP_BY_HOP]
                    self.answer(reply.status, kept, content)
                finally:
                    origin.close()

            do_GET = do_POST = do_DELETE = forward

        super().__init__(Forward)


class ScriptedEndpoint(_Served):
    """An MCP endpoint answering POSTs with ``statuses`` in order (the last repeating): a
    non-200 bare, a 200 with a tool result for the request's id. ``posts`` lists the ids."""

    def __init__(self, statuses: Sequence[int]) -> None:
        self.posts: list[Any] = []
        endpoint = self

        class Answer(_Handler):
            def do_POST(self) -> None:
                message = json.loads(self.body())
                endpoint.posts.append(message.get("id"))
                status = statuses[min(len(endpoint.posts), len(statuses)) - 1]
                if status != 200:
                    self.answer(status, [], b"")
                    return
                result = {"content": [{"type": "text", "text": "ok"}], "isError": False}
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
                self.answer(200, [("content-type", "application/json")], json.dumps(reply).encode())

        super().__init__(Answer)
