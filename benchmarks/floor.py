"""The least a classifying transport can cost: ``python -m benchmarks.floor``.

``MinimalTransport`` does only what no classifying wrapper can skip for a JSON
``tools/call``: read the request's method and id, send it, read the answer, classify it
(with mcp-retry's own parser and classifier, quick readers included) and keep one tuple per
call. It retries nothing, records no attempts, tells no hooks. With ``classify=False`` it
does the same reads and hand-off without parsing anything: the plumbing alone. Measured
beside bare httpx, mcp-retry and httpx-retries in one run, the two show how mcp-retry's
cost splits into plumbing, classification and everything else.
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

from ._timing import Batch, interleave
from .percall import URL, _wrap, contenders, mock_inner, summarise, sync_batch

__all__ = ["MinimalTransport", "run"]

SKETCH = "minimal sketch"
PLUMBING = "its plumbing alone"


class MinimalTransport(httpx.BaseTransport):
    """Classify every JSON-RPC answer and keep a bounded history; nothing more.

    With ``classify=False``: the same reads, hand-off and history, nothing parsed.
    """

    def __init__(self, inner: httpx.BaseTransport, *, classify: bool = True) -> None:
        self._inner = inner
        self._classify = classify
        self._history: deque[tuple[Any, ...]] = deque(maxlen=1000)
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        content_type = request.headers.get("content-type", "")
        if request.method != "POST" or not content_type.startswith("application/json"):
            return self._inner.handle_request(request)
        sent = request.read()
        facts = parse_request(sent) if self._classify else None
        if self._classify and facts is None:
            return self._inner.handle_request(request)
        started = time.monotonic()
        response = self._inner.handle_request(request)
        stream = response.stream
        assert isinstance(stream, httpx.SyncByteStream)
        body = b"".join(stream)
        stream.close()
        response.stream = httpx.ByteStream(body)
        answer_type = response.headers.get("content-type")
        verdict = None
        if facts is not None:
            verdict = classify(
                response.status_code,
                body,
                content_type=answer_type,
                expected_id=facts.id,
                method=facts.method,
            )
        with self._lock:
            self._history.append((len(sent), answer_type, verdict, time.monotonic() - started))
        return response


def _batches(case: str) -> dict[str, Batch]:
    batches: dict[str, Batch] = {}
    for name in (*contenders()[:2], SKETCH, PLUMBING, *contenders()[2:]):
        if "stdlib" in name:
            continue
        inner, _ = mock_inner(case)
        if name in (SKETCH, PLUMBING):
            transport: httpx.BaseTransport = MinimalTransport(inner, classify=name == SKETCH)
        else:
            transport = _wrap(name, inner, False)
        batches[name] = sync_batch(httpx.Client(transport=transport), URL, name)
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
