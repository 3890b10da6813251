"""Classifier throughput: ``classify(...)`` calls per second on whole bodies, JSON and SSE."""

from __future__ import annotations

from typing import Any

from mcp_safe_retry import classify
from mcp_safe_retry.core import jsonrpc as _jsonrpc

from ._payloads import json_response, sse_stream
from ._timing import clock, median

CASES = (
    ("json", 1024),
    ("json", 65536),
    ("sse", 65536),
    ("sse", 1 << 20),
)


def _rate(body: bytes, content_type: str, seconds: float, rounds: int) -> list[float]:
    """Calls per second, one figure per round of about ``seconds``."""
    n = 1
    while True:  # calibrate
        start = clock()
        for _ in range(n):
            classify(200, body, content_type=content_type)
        took = clock() - start
        if took > seconds / 4:
            break
        n *= 4
    n = max(1, round(n * seconds / took))
    rates = []
    for _ in range(rounds):
        start = clock()
        for _ in range(n):
            classify(200, body, content_type=content_type)
        rates.append(n / (clock() - start))
    return rates


def run(*, rounds: int, seconds: float) -> list[dict[str, Any]]:
    rows = []
    parsers = ["orjson", "stdlib"] if _jsonrpc.FAST_PARSER_INSTALLED else ["stdlib"]
    for kind, size in CASES:
        body = json_response(size) if kind == "json" else sse_stream(size)
        content_type = "application/json" if kind == "json" else "text/event-stream"
        expected = classify(200, body, content_type=content_type)
        if expected.outcome != "TOOL_SUCCESS":
            raise RuntimeError(f"classifier benchmark body misclassified: {expected}")
        for parser in parsers:
            saved = _jsonrpc.use_fast_parser(parser != "stdlib" and _jsonrpc.FAST_PARSER_INSTALLED)
            try:
                rates = _rate(body, content_type, seconds, rounds)
            finally:
                _jsonrpc.use_fast_parser(saved)
            rate = median(rates)
            rows.append(
                {
                    "kind": kind,
                    "bytes": len(body),
                    "parser": parser,
                    "calls_per_s": rate,
                    "mb_per_s": rate * len(body) / 1e6,
                    "us_per_call": 1e6 / rate,
                }
            )
    return rows
