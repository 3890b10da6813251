"""The quick readers (msgspec, extra ``fast``) never change a verdict or a request's facts.

``quick_read`` may only say "surely a plain success" or "surely a request or notification";
``quick_call`` may only read a plain ``tools/call``. Each is compared here with the full
reader on the same bytes: well-formed answers, near misses, hostile bytes, and mutations of
real answers, as JSON bodies and as SSE events.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_safe_retry.core import jsonrpc as _jsonrpc
from mcp_safe_retry.core import quick_read as quick_module
from mcp_safe_retry.core.classify import classify_answer, classify_event
from mcp_safe_retry.core.jsonrpc import parse_request, quick_call
from mcp_safe_retry.core.outcomes import Outcome
from mcp_safe_retry.core.quick_read import Quick, not_requests, quick_read

pytest.importorskip("msgspec", reason="the quick readers need the [fast] extra")
pytestmark = pytest.mark.skipif(
    not _jsonrpc.FAST_PARSER_INSTALLED, reason="the quick readers run beside orjson only"
)

SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6)
VALUES = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=12,
)
CONTENT = st.lists(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=20)}), max_size=3
)
RESULTS = st.fixed_dictionaries(
    {},
    optional={
        "content": CONTENT | VALUES,
        "isError": st.sampled_from([False, True, 0, 1, None, "false"]),
        "resultType": st.sampled_from(["complete", "input_required", "partial", None, 1]),
        "inputRequests": VALUES,
        "structuredContent": VALUES,
    },
)
ANSWERS = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "2.0", "1.0", 2]),
        "id": st.sampled_from([1, "1", None, True, 1.0, 2, 10**20]),
        "result": RESULTS | VALUES,
        "error": VALUES,
    },
)
IDS = st.sampled_from([1, "1", 2, 10**20])
METHODS = st.sampled_from(["tools/call", "tools/list", "resources/read", "ping"])


def _full(body: bytes, expected_id: Any, method: str) -> Any:
    return classify_answer(
        200, body, content_type="application/json", expected_id=expected_id, method=method
    )[0]


def _quick(body: bytes, expected_id: Any, method: str) -> Any:
    return classify_answer(
        200,
        body,
        content_type="application/json",
        expected_id=expected_id,
        method=method,
        want_message=False,
    )[0]


def _encodings(answer: dict[str, Any]) -> list[bytes]:
    text = json.dumps(answer)
    return [text.encode(), json.dumps(answer, indent=1, ensure_ascii=False).encode()]


@given(answer=ANSWERS, expected_id=IDS, method=METHODS)
@settings(max_examples=600, deadline=None)
def test_quick_success_agrees_with_the_full_classifier(
    answer: dict[str, Any], expected_id: Any, method: str
) -> None:
    for body in _encodings(answer):
        full = _full(body, expected_id, method)
        if quick_read(body, expected_id, method) is Quick.SUCCESS:
            assert full.outcome in (Outcome.TOOL_SUCCESS, Outcome.RPC_SUCCESS), body
        assert _quick(body, expected_id, method) == full


@given(
    answer=ANSWERS,
    cut=st.integers(0, 400),
    insert=st.binary(min_size=1, max_size=3),
    method=METHODS,
)
@settings(max_examples=600, deadline=None)
def test_quick_success_agrees_on_damaged_bytes(
    answer: dict[str, Any], cut: int, insert: bytes, method: str
) -> None:
    body = json.dumps(answer).encode()
    cut = min(cut, len(body))
    for damaged in (body[:cut], body[:cut] + insert + body[cut:], body[:cut] + body[cut + 1 :]):
        assert _quick(damaged, 1, method) == _full(damaged, 1, method), damaged


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc":"2.0","id":1,"result":{"content":["\xff"]}}',  # bad UTF-8, skipped part
        b'{"jsonrpc":"2.0","id":1,"x":"\xc3","result":{"content":[]}}',
        b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false,"isError":true}}',
        b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"is\\u0045rror":true}}',
        b'{"jsonrpc":"2.0","id":1,"result":{"content":[NaN]}}',
        b'{"jsonrpc":"2.0","id":1,"result":{"content":["\\ud800"]}}',
        b'{"jsonrpc":"2.0","id":1,"result":{"content":[]},"error":null}',
        b'{"jsonrpc":"2.0","id":1,"result":{"content":null}}',
        b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":0}}',
        b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}} trailing',
        b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"result":{"content":[]}}',
        b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"x":' + b"[" * 1010 + b"]" * 1010 + b"}}",
        b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"x":' + b"[" * 3000 + b"]" * 3000 + b"}}",
        '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ünï"}]}}'.encode(),
    ],
)
def test_quick_success_on_hostile_answers(body: bytes) -> None:
    assert _quick(body, 1, "tools/call") == _full(body, 1, "tools/call")


def test_quick_success_takes_the_common_answer() -> None:
    body = b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"ok"}]}}'
    assert quick_read(body, 7, "tools/call") is Quick.SUCCESS
    tools = b'{"jsonrpc":"2.0","id":"a","result":{"tools":[]}}'
    assert quick_read(tools, "a", "tools/list") is Quick.SUCCESS
    assert quick_read(body, "7", "tools/call") is Quick.NOT_SURE  # ids differ by type
    note = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}'
    assert quick_read(note, 7, "tools/call") is Quick.REQUEST


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b'{"method":"notifications/progress"}', id="no-jsonrpc"),
        pytest.param(b'{"jsonrpc":"2.0","method":"ping","error":null}', id="error-member"),
    ],
)
def test_an_odd_request_is_left_to_the_full_reader_which_finds_no_answer(data: bytes) -> None:
    """msgspec refuses a message without ``"jsonrpc":"2.0"`` or with an ``"error"``
    member as it reads: NOT_SURE, not REQUEST; the full classifier then says what REQUEST
    would have said: no answer to our request."""
    assert quick_read(data, 1, "tools/call") is Quick.NOT_SURE
    assert classify_event(data, "message", 1, "tools/call") is None
    assert classify_event(data, "message", 1, "tools/call", want_message=False) is None


# -- SSE events ---------------------------------------------------------------------------

EVENTS = ANSWERS | st.fixed_dictionaries(
    {"method": st.sampled_from(["notifications/progress", "sampling/createMessage", None])},
    optional={"jsonrpc": st.just("2.0"), "id": IDS, "params": VALUES, "result": RESULTS},
)


def _full_event(data: bytes, expected_id: Any, method: str) -> Any:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(quick_module, "_decode", None)  # the quick reader is never sure
        return classify_event(data, "message", expected_id, method)


@given(message=EVENTS, expected_id=IDS, method=METHODS, cut=st.integers(0, 300))
@settings(max_examples=600, deadline=None)
def test_quick_event_reads_agree_with_the_full_classifier(
    message: dict[str, Any], expected_id: Any, method: str, cut: int
) -> None:
    whole = json.dumps(message).encode()
    for data in (whole, whole[:cut], whole[:cut] + b"\xff" + whole[cut:]):
        full = _full_event(data, expected_id, method)
        for want_message in (True, False):
            quick = classify_event(data, "message", expected_id, method, want_message=want_message)
            assert (quick is None) == (full is None), data
            if quick is not None:
                assert quick[0] == full[0], data
                if want_message:
                    assert quick[1] == full[1], data


# -- many SSE events read together --------------------------------------------------------

# Bodies that are not one JSON value each, but would read as values of the right count if
# they were simply joined: one too many here, one too few there.
MISALIGNED = [
    [b"{} {}", b'{"a":[', b"]}"],
    [b'{"method":"a"},{"method":"b"}', b'{"method":"c",', b'"x":1}'],
    [b"{}]\n[{}", b'{"a":"', b'"}'],
    [b"{}] [{}", b"{}"],
    [b'{"method":"a"}] [{"method":"b"}', b'{"method":"c"'],
    [b"", b"{}", b" "],
    [b'{"method":"a"}', b"]\n[", b'{"method":"b"}'],
]
BODIES = st.lists(
    EVENTS.map(lambda m: json.dumps(m).encode())
    | st.sampled_from(
        [b"{", b"}", b"[", b"]", b"]\n[", b",", b"", b" ", b'"', b"{}", b"\xff", b"null"]
    )
    | st.binary(max_size=8),
    max_size=8,
)


def _one_by_one(bodies: list[bytes], expected_id: Any, method: str) -> list[int]:
    found = [quick_read(body, expected_id, method) for body in bodies]
    return [i for i, quick in enumerate(found) if quick is not Quick.REQUEST]


@pytest.mark.parametrize("bodies", MISALIGNED)
def test_bodies_read_together_never_read_across_each_other(bodies: list[bytes]) -> None:
    assert not_requests(bodies, 1, "tools/call") == _one_by_one(bodies, 1, "tools/call")


@given(bodies=BODIES, expected_id=IDS, method=METHODS)
@settings(max_examples=600, deadline=None)
def test_bodies_read_together_read_as_each_alone(
    bodies: list[bytes], expected_id: Any, method: str
) -> None:
    """``not_requests`` (one decode for all, when it can) says what ``quick_read`` says
    of each body alone, whatever the bodies: messages, fragments that might join up."""
    got = not_requests(bodies, expected_id, method)
    assert got == _one_by_one(bodies, expected_id, method), bodies


def test_notifications_read_together_in_one_decode() -> None:
    note = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}'
    answer = b'{"jsonrpc":"2.0","id":7,"result":{"content":[]}}'
    calls = []
    decode_lines = quick_module._decode_lines
    assert decode_lines is not None

    def counted(text: bytes) -> Any:
        calls.append(text)
        return decode_lines(text)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(quick_module, "_decode_lines", counted)
        assert not_requests([note] * 50, 7, "tools/call") == []
        assert not_requests([note, answer, note], 7, "tools/call") == [1]
        assert not_requests([note, b"{", note], 7, "tools/call") == [1]
    assert len(calls) == 3


# -- requests -----------------------------------------------------------------------------

CALLS = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "2.0", "1.0"]),
        "id": st.sampled_from([1, "1", None, True, 1.5, 10**20, -3]),
        "method": st.sampled_from(["tools/call", "tools/call", "tools/list", 5]),
        "params": st.fixed_dictionaries(
            {},
            optional={
                "name": st.sampled_from(["search", "", 3, None, "ünï"]),
                "arguments": VALUES,
                "_meta": VALUES,
            },
        )
        | VALUES,
    },
)


def _facts(facts: Any) -> Any:
    return None if facts is None else (facts.method, facts.id, type(facts.id), facts.tool)


@given(call=CALLS, cut=st.integers(0, 300), damage=st.booleans())
@settings(max_examples=600, deadline=None)
def test_quick_call_reads_what_the_full_parser_reads(
    call: dict[str, Any], cut: int, damage: bool
) -> None:
    body = json.dumps(call).encode()
    if damage:
        body = body[:cut] + b"\xff" + body[cut:]
    quick = quick_call(body)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_jsonrpc, "_decode_call", None)
        full = parse_request(body)
    if quick is not None:
        assert _facts(quick) == _facts(full)
        assert full is not None and quick.digest == full.digest
        assert quick.exact_message() == json.loads(body)
    assert _facts(parse_request(body)) == _facts(full)


def _reordered(value: Any) -> Any:
    """The same JSON value with every object's keys in reverse order."""
    if isinstance(value, dict):
        return {k: _reordered(value[k]) for k in reversed(value)}
    if isinstance(value, list):
        return [_reordered(v) for v in value]
    return value


STRICT_VALUES = st.recursive(  # RFC 8259 JSON: no NaN or Infinity
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=12,
)
WELL_FORMED_CALLS = st.fixed_dictionaries(
    {
        "jsonrpc": st.just("2.0"),
        "id": st.sampled_from([1, "1", -3, 10**20]),
        "method": st.just("tools/call"),
        "params": st.fixed_dictionaries(
            {"name": st.sampled_from(["search", "", "ünï"])},
            optional={
                "arguments": st.dictionaries(st.text(max_size=6), STRICT_VALUES, max_size=4),
                "_meta": STRICT_VALUES,
                "task": STRICT_VALUES,
            },
        ),
    }
)


@given(call=WELL_FORMED_CALLS, other_id=st.sampled_from([2, "x"]), meta=STRICT_VALUES)
@settings(max_examples=400, deadline=None)
def test_the_digest_is_one_definition_whichever_reader(
    call: dict[str, Any], other_id: Any, meta: Any
) -> None:
    """The quick reader, the full reader and the standard library alone (no extras) give
    one digest, and a re-send that orders its keys differently, carries another id or
    another ``_meta`` is the same call."""
    body = json.dumps(call).encode()
    resent = _reordered({**call, "id": other_id, "params": {**call["params"], "_meta": meta}})
    resent_body = json.dumps(resent, ensure_ascii=False).encode()
    quick = quick_call(body)
    assert quick is not None
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_jsonrpc, "_decode_call", None)
        full = parse_request(resent_body)
    before = _jsonrpc.use_fast_parser(False)
    try:
        plain = parse_request(body)
        assert plain is not None
        plain_digest = plain.digest  # worked out while only the standard library reads
    finally:
        _jsonrpc.use_fast_parser(before)
    assert full is not None
    assert quick.digest == full.digest == plain_digest
    assert len(quick.digest) == 24


def test_quick_call_digest_ignores_meta_and_id_but_not_arguments() -> None:
    def call(request_id: int, arguments: dict[str, Any], token: str) -> bytes:
        params = {"name": "search", "arguments": arguments, "_meta": {"progressToken": token}}
        body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        return json.dumps(body).encode()

    first = quick_call(call(1, {"q": "a"}, "p-1"))
    again = quick_call(call(2, {"q": "a"}, "p-2"))
    other = quick_call(call(3, {"q": "b"}, "p-3"))
    assert first is not None and again is not None and other is not None
    assert first.digest == again.digest != other.digest
    assert len(first.digest) == 24
