"""The least a classifying transport can cost: ``python -m benchmarks.floor``.

``MinimalTransport`` does only what no classifying wrapper can skip for a JSON
``tools/call``: read the request's method and id, send it, read the answer, classify it
(with mcp-retry's own parser and classifier, quick readers included) and keep one tuple per
call. It retries nothing, records no attempts, tells no hooks. Measured beside bare httpx,
mcp-retry and httpx-retries in one run, it shows how much of mcp-retry's cost is the
classification itself and how much is everything else.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from typing import Any

import httpx

from mcp_retry import classify
from mcp_retry._jsonrpc import parse_request

from ._payloads import REQUEST
from ._timing import Batch, clock, interleave
from .percall import POST_HEADERS, URL, _wrap, contenders, mock_inner, summarise

__all__ = ["MinimalTransport", "run"]

SKETCH = "minimal sketch"


class MinimalTransport(httpx.BaseTransport):
    """Classify every JSON-RPC answer and keep a bounded history; nothing more."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self._inner = inner
        self._history: deque[tuple[Any, ...]] = deque(maxlen=1000)
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        content_type = request.headers.get("content-type", "")
        facts = None
        if request.method == "POST" and content_type.startswith("application/json"):
            facts = parse_request(request.read())
        if facts is None:
            return self._inner.handle_request(request)
        started = time.monotonic()
        response = self._inner.handle_request(request)
        stream = response.stream
        assert isinstance(stream, httpx.SyncByteStream)
        body = b"".join(stream)
        stream.close()
        response.stream = httpx.ByteStream(body)
        verdict = classify(
            response.status_code,
            body,
            content_type=response.headers.get("content-type"),
            expected_id=facts.id,
            method=facts.method,
        )
        with self._lock:
            self._history.append((facts.method, facts.id, verdict, time.monotonic() - started))
        return response


def _batches(case: str) -> dict[str, Batch]:
    batches: dict[str, Batch] = {}
    for name in (*contenders()[:2], SKETCH, *contenders()[2:]):
        if "stdlib" in name:
            continue
        inner, _ = mock_inner(case)
        transport = MinimalTransport(inner) if name == SKETCH else _wrap(name, inner, False)
        client = httpx.Client(transport=transport)

        def batch(n: int, client: httpx.Client = client) -> float:
            post = client.post
            start = clock()
            for _ in range(n):
                post(URL, content=REQUEST, headers=POST_HEADERS)
            return clock() - start

        batches[name] = batch
    return batches


def run(*, case: str = "json-1k", rounds: int = 15, target: float = 0.025) -> dict[str, Any]:
    """Median µs per call and ratio to bare httpx of each contender (sync, mock inner)."""
    return summarise(interleave(_batches(case), rounds=rounds, target=target))


def main(argv: list[str]) -> int:
    case = argv[0] if argv else "json-1k"
    for name, cell in run(case=case).items():
        print(
            f"{name:24s} {cell['us_per_call']:7.1f} µs  x{cell['ratio']:.3f}"
            f"  +{cell['added_us']:.1f} µs"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
