"""Cost per call: bare httpx vs mcp-safe-retry vs httpx-retries over the same inner transport.

The inner transport is either a prebuilt-body mock (its own cost tiny and stable) or a real
HTTP transport to the loopback server in ``_server.py``. Every contender has its own client;
rounds interleave the contenders in a shuffled order and the medians are reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx

import mcp_safe_retry
from mcp_safe_retry.core import jsonrpc as _jsonrpc

from ._mock import PrebuiltTransport
from ._payloads import JSON_HEADERS, REQUEST, SSE_HEADERS, json_response, sse_chunks, sse_stream
from ._timing import Batch, clock, interleave, median

try:  # the closest peer; optional (the bench extra)
    import httpx_retries
except ImportError:  # pragma: no cover - depends on the environment
    httpx_retries = None

__all__ = [
    "baseline_module",
    "contenders",
    "loopback_server",
    "parse_case",
    "run_case",
    "sync_batch",
]

URL = "http://mcp.test/mcp"
# What an MCP client sends after initialisation.
POST_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
    "mcp-session-id": "4f1c2a9e0b7d4c1e8f3a6b5d2c9e0f1a",
}
STDLIB = "mcp-safe-retry (stdlib json)"
# Without it, a request's header and body writes meet delayed ACKs: ~40 ms stalls that
# would measure the kernel's timers instead of the client.
NODELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]


# An older mcp_safe_retry imported under another name (see run.py --baseline), if any.
BASELINE: dict[str, Any] = {}


def baseline_module(name: str) -> Any:
    """A submodule of the baseline package, e.g. ``"httpx2"`` or ``"core.sse"``."""
    return importlib.import_module(f"{BASELINE['module'].__name__}.{name}")


def contenders() -> tuple[str, ...]:
    """httpx, mcp-safe-retry, mcp-safe-retry on the stdlib parser (if orjson is in), the
    baseline (if one was loaded), httpx-retries."""
    names = ["httpx", "mcp-safe-retry"]
    if _jsonrpc.FAST_PARSER_INSTALLED:
        names.append(STDLIB)
    if BASELINE:
        names.append(BASELINE["label"])
    if httpx_retries is not None:
        names.append("httpx-retries")
    return tuple(names)


def parse_case(name: str) -> tuple[str, int]:
    """``"json-64k"`` -> ``("json", 65536)``."""
    kind, size = name.split("-")
    unit = {"k": 1024, "m": 1 << 20}[size[-1]]
    return kind, int(size[:-1]) * unit


def mock_inner(case: str) -> tuple[PrebuiltTransport, int]:
    kind, nbytes = parse_case(case)
    if kind == "json":
        return PrebuiltTransport([json_response(nbytes)], JSON_HEADERS), nbytes
    body = sse_stream(nbytes)
    return PrebuiltTransport(sse_chunks(body), SSE_HEADERS), len(body)


def _no_sleep(_: float) -> None:  # never called: every call succeeds at once
    raise AssertionError("no retry expected")


async def _no_async_sleep(_: float) -> None:
    raise AssertionError("no retry expected")


def _wrap(contender: str, inner: Any, is_async: bool) -> Any:
    if contender == "httpx":
        return inner
    if BASELINE and contender == BASELINE["label"]:
        module = BASELINE["module"]
        if is_async:
            return module.AsyncRetryTransport(inner, sleep=_no_async_sleep)
        return module.RetryTransport(inner, sleep=_no_sleep)
    if contender.startswith("mcp-safe-retry"):
        if is_async:
            return mcp_safe_retry.AsyncRetryTransport(inner, sleep=_no_async_sleep)
        return mcp_safe_retry.RetryTransport(inner, sleep=_no_sleep)
    retry = httpx_retries.Retry(total=2, allowed_methods=["POST"])
    return httpx_retries.RetryTransport(transport=inner, retry=retry)


@contextlib.contextmanager
def _json_parser(contender: str) -> Iterator[None]:
    """Run the stdlib-json contender with orjson switched off, the others as installed."""
    saved = _jsonrpc.use_fast_parser(contender != STDLIB and _jsonrpc.FAST_PARSER_INSTALLED)
    try:
        yield
    finally:
        _jsonrpc.use_fast_parser(saved)


def sync_batches(case: str, url: str | None = None) -> dict[str, Batch]:
    """One batch per contender; ``url`` set means loopback (a real HTTP transport)."""
    batches: dict[str, Batch] = {}
    for contender in contenders():
        if url is None:
            inner, size = mock_inner(case)
            target = URL
        else:
            inner, size, target = (
                httpx.HTTPTransport(socket_options=NODELAY),
                -1,
                f"{url}/mcp/{case}",
            )
        client = httpx.Client(transport=_wrap(contender, inner, False))
        response = client.post(target, content=REQUEST, headers=POST_HEADERS)
        if response.status_code != 200 or (size >= 0 and len(response.content) != size):
            raise RuntimeError(f"{contender} {case}: unexpected answer")
        batches[contender] = sync_batch(client, target, contender)
    return batches


def sync_batch(client: httpx.Client, target: str, name: str) -> Batch:
    """A batch of n timed POSTs of the request through ``client``, with the JSON parser
    ``name`` runs on (see ``_json_parser``)."""

    def batch(n: int) -> float:
        post = client.post
        with _json_parser(name):
            start = clock()
            for _ in range(n):
                post(target, content=REQUEST, headers=POST_HEADERS)
            return clock() - start

    return batch


def async_batches(
    case: str, loop: asyncio.AbstractEventLoop, url: str | None = None
) -> dict[str, Batch]:
    batches: dict[str, Batch] = {}
    for contender in contenders():
        if url is None:
            inner, size = mock_inner(case)
            target = URL
        else:
            inner, size, target = (
                httpx.AsyncHTTPTransport(socket_options=NODELAY),
                -1,
                f"{url}/mcp/{case}",
            )
        client = httpx.AsyncClient(transport=_wrap(contender, inner, True))
        response = loop.run_until_complete(
            client.post(target, content=REQUEST, headers=POST_HEADERS)
        )
        if response.status_code != 200 or (size >= 0 and len(response.content) != size):
            raise RuntimeError(f"{contender} {case}: unexpected answer")

        async def run(n: int, client: httpx.AsyncClient, target: str) -> float:
            post = client.post
            start = clock()
            for _ in range(n):
                await post(target, content=REQUEST, headers=POST_HEADERS)
            return clock() - start

        def batch(
            n: int, client: httpx.AsyncClient = client, target: str = target, name: str = contender
        ) -> float:
            with _json_parser(name):
                return loop.run_until_complete(run(n, client, target))

        batches[contender] = batch
    return batches


def summarise(per_call: dict[str, list[float]], bare: str = "httpx") -> dict[str, Any]:
    """Median µs per call of each contender and the median of per-round ratios to ``bare``
    (with their spread, the lowest and highest per-round ratio, and the ratio of the
    fastest rounds)."""
    base = per_call[bare]
    out: dict[str, Any] = {}
    for name, times in per_call.items():
        ratios = [t / b for t, b in zip(times, base, strict=True)]
        out[name] = {
            "us_per_call": median(times) * 1e6,
            "ratio": median(ratios),
            "ratio_min": min(ratios),
            "ratio_max": max(ratios),
            "best_ratio": min(times) / min(base),  # the least disturbed round of each
            "added_us": median([t - b for t, b in zip(times, base, strict=True)]) * 1e6,
            "rounds": len(times),
        }
    return out


def run_case(
    case: str, *, mode: str, rounds: int, target: float, url: str | None = None
) -> dict[str, Any]:
    if mode == "sync":
        per_call = interleave(sync_batches(case, url), rounds=rounds, target=target)
    else:
        loop = asyncio.new_event_loop()
        try:
            per_call = interleave(async_batches(case, loop, url), rounds=rounds, target=target)
        finally:
            loop.close()
    return summarise(per_call)


@contextlib.contextmanager
def server_process(module: str, path: str = "") -> Iterator[str]:
    """Start ``python -m module`` (a server on 127.0.0.1 port 0 that prints ``PORT n`` and
    exits when its stdin closes); yield its base URL with ``path`` appended."""
    process = subprocess.Popen(
        [sys.executable, "-m", module],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"{module} did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}{path}"
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def loopback_server() -> contextlib.AbstractContextManager[str]:
    """Start ``_server.py`` in a subprocess on 127.0.0.1 port 0; yield its base URL."""
    return server_process("benchmarks._server")
