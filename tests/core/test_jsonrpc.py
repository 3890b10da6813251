"""JSON-RPC request facts (core/jsonrpc.py): the parser never raises on hostile input."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_safe_retry.core.jsonrpc import parse_request


@given(st.binary(max_size=400) | st.text(max_size=200).map(str.encode))
@settings(max_examples=300, deadline=None)
def test_request_parser_never_raises(body: bytes) -> None:
    facts = parse_request(body)
    assert facts is None or isinstance(facts.method, str)
