"""The least a classifying transport can cost: ``python -m benchmarks.floor``.

``MinimalTransport`` does only what no classifying wrapper can skip for a JSON
``tools/call``: read the request's method and id, send it, read the answer, classify it and
keep one tuple per call. It retries nothing, records no attempts, tells no hooks. It comes
in three depths, measured beside bare httpx, mcp-safe-retry and httpx-retries in one run:

- ``classify``: mcp-safe-retry's own request parser and classifier (quick readers included);
- ``recognise``: only the request's id and method read with msgspec, and the answer's
  quick read (a full classification only when that is not sure);
- ``plumbing``: the same reads, hand-off and history, nothing parsed.

Together they show how mcp-safe-retry's cost splits into plumbing, classification, its
parser's and classifier's own glue, and everything else.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from typing import Any

import httpx
import msgspec

from mcp_safe_retry import classify
from mcp_safe_retry.core.fast import Quick, quick_read
from mcp_safe_retry.core.jsonrpc import parse_request

from ._timing import Batch, interleave
from .percall import URL, _wrap, contenders, mock_inner, summarise, sync_batch

__all__ = ["MinimalTransport", "run"]

DEPTHS = {
    "minimal sketch": "classify",
    "sketch, successes recognised": "recognise",
    "its plumbing alone": "plumbing",
}


class _Ids(msgspec.Struct):
    id: Any = None
    method: Any = None


_read_ids = msgspec.json.Decoder(_Ids).decode


class MinimalTransport(httpx.BaseTransport):
    """Classify every JSON-RPC answer and keep a bounded history; nothing more.

    ``depth`` is "classify", "recognise" or "plumbing" (see the module's docstring).
    """

    def __init__(self, inner: httpx.BaseTransport, *, depth: str = "classify") -> None:
        self._inner = inner
        self._depth = depth
        self._history: deque[tuple[Any, ...]] = deque(maxlen=1000)
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        content_type = request.headers.get("content-type", "")
        if request.method != "POST" or not content_type.startswith("application/json"):
            return self._inner.handle_request(request)
        sent = request.read()
        started = time.monotonic()
        response = self._inner.handle_request(request)
        stream = response.stream
        assert isinstance(stream, httpx.SyncByteStream)
        body = b"".join(stream)
        stream.close()
        response.stream = httpx.ByteStream(body)
        answer_type = response.headers.get("content-type")
        verdict = self._verdict(sent, response.status_code, body, answer_type)
        with self._lock:
            self._history.append((len(sent), answer_type, verdict, time.monotonic() - started))
        return response

    def _verdict(self, sent: bytes, status: int, body: bytes, content_type: str | None) -> Any:
        if self._depth == "plumbing":
            return None
        if self._depth == "recognise":
            ids = _read_ids(sent)
            if quick_read(body, ids.id, ids.method) is Quick.SUCCESS:
                return ids.method
            request_id, method = ids.id, ids.method
        else:
            facts = parse_request(sent)
            assert facts is not None
            request_id, method = facts.id, facts.method
        return classify(
            status, body, content_type=content_type, expected_id=request_id, method=method
        )


def _batches(case: str) -> dict[str, Batch]:
    batches: dict[str, Batch] = {}
    for name in (*contenders()[:2], *DEPTHS, *contenders()[2:]):
        if "stdlib" in name:
            continue
        inner, _ = mock_inner(case)
        if name in DEPTHS:
            transport: httpx.BaseTransport = MinimalTransport(inner, depth=DEPTHS[name])
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
            f"{name:30s} {cell['us_per_call']:7.1f} µs  x{cell['ratio']:.3f}"
            f"  +{cell['added_us']:.1f} µs"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
