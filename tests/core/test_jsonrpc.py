"""JSON-RPC request facts (core/jsonrpc.py): the parser never raises on hostile input."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_safe_retry.core.jsonrpc import is_request_id, parse_request, quick_call, same_id


@given(st.binary(max_size=400) | st.text(max_size=200).map(str.encode))
@settings(max_examples=300, deadline=None)
def test_request_parser_never_raises(body: bytes) -> None:
    facts = parse_request(body)
    assert facts is None or isinstance(facts.method, str)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            b'{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"t"}}', id="bool-id"
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"t"}}', id="float-id"
        ),
        pytest.param(b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"t"}}', id="no-id"),
        pytest.param(
            b'{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"t"}}', id="version"
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"t"}}', id="method"
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}', id="params-null"
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}', id="name-number"
        ),
        pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"tools/call"}', id="no-params"),
        pytest.param(
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5,"name":"t"}}',
            id="duplicate-name",
        ),
    ],
)
def test_quick_call_leaves_all_but_a_plain_tool_call_to_the_full_reader(body: bytes) -> None:
    assert quick_call(body) is None
    full = parse_request(body)
    expected = json.loads(body)
    if full is not None:  # what the full reader makes of it stands
        assert full.method == expected["method"] and full.id == expected.get("id")


@pytest.mark.parametrize("request_id", [7, "7", 10**30, -1, ""])
def test_quick_call_reads_a_plain_tool_call_s_id_and_tool(request_id: object) -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": "t"}}
    ).encode()
    facts = quick_call(body)
    assert facts is not None and (facts.id, facts.tool) == (request_id, "t")
    assert type(facts.id) is type(request_id)


class _Id(str):
    pass


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1, True), ("a", True), (_Id("a"), True), (True, False), (1.0, False), (None, False)],
)
def test_is_request_id(value: object, expected: bool) -> None:
    assert is_request_id(value) is expected


def test_a_digest_is_worked_out_once_when_read_and_is_equal_only_to_itself() -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{}}}'
    quick, full = quick_call(body), parse_request(body.replace(b'"id":1', b'"id":2'))
    assert quick is not None and full is not None
    assert quick.identity._value is None  # nothing worked out while reading
    assert quick.digest == full.digest == str(quick.identity)  # the id and _meta left out
    assert quick.identity._value == quick.digest and repr(quick.identity).startswith("Digest(")
    assert quick.identity != full.identity  # equal only to itself, never as a tuple


class _Name(str):
    pass


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        pytest.param(1, 1, True, id="int"),
        pytest.param("a", "a", True, id="str"),
        pytest.param(1, "1", False, id="int-str"),
        pytest.param(True, 1, False, id="bool-int"),
        pytest.param(1, True, False, id="int-bool"),
        pytest.param(True, True, False, id="bool-bool"),
        pytest.param(1.0, 1.0, False, id="float"),
        pytest.param(None, None, False, id="null"),
        pytest.param(_Name("a"), _Name("a"), True, id="str-subclass"),
        pytest.param(_Name("a"), "a", False, id="str-subclass-str"),
    ],
)
def test_ids_are_the_same_only_as_json_values_of_one_type(a: object, b: object, same: bool) -> None:
    assert same_id(a, b) is same
