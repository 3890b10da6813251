"""A large 2xx answer classified by its envelope alone: what that catches, what it does not,
and what the record says.

Below ``ENVELOPE_BYTES`` nothing changes. Above it a plain success may be recognised from
the top-level members and the result's without validating the rest; the verdict then
carries ``ENVELOPE_ONLY`` as its detail (the record's ``detail``). Everything else (an error,
a bad envelope, a body cut short, anything the walk gives up on) is read whole as before.
"""

from __future__ import annotations

import json
from typing import Any
from unittest.mock import patch

import attrs
import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_safe_retry import classify, get_record
from mcp_safe_retry.core import quick_read
from mcp_safe_retry.core.classify import ENVELOPE_ONLY, classify_message
from mcp_safe_retry.core.envelope import ENVELOPE_BYTES, TOKENS, read_envelope
from mcp_safe_retry.core.stream import StreamTracker
from mcp_safe_retry.httpx2 import RetryTransport
from mcp_safe_retry.records import Outcome

BIG = "x" * (ENVELOPE_BYTES + 1000)


def body(result: Any = None, **members: Any) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 1}
    if result is not None:
        message["result"] = result
    message.update(members)
    return json.dumps(message).encode()


def tool(text: str = BIG, **extra: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], **extra}


def test_a_large_success_is_classified_by_its_envelope_and_says_so() -> None:
    verdict = classify(200, body(tool(isError=False)))
    assert verdict.outcome is Outcome.TOOL_SUCCESS
    assert verdict.result_type == "complete"
    assert verdict.detail == ENVELOPE_ONLY
    other = classify(200, body({"contents": [{"text": BIG}]}), method="resources/read")
    assert (other.outcome, other.detail) == (Outcome.RPC_SUCCESS, ENVELOPE_ONLY)


def test_below_the_size_nothing_changes() -> None:
    verdict = classify(200, body(tool("x" * (ENVELOPE_BYTES // 2))))
    assert (verdict.outcome, verdict.detail) == (Outcome.TOOL_SUCCESS, None)


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        pytest.param(body(tool())[:-100], Outcome.MALFORMED_JSON, id="cut-short"),
        pytest.param(body(tool()) + b" x", Outcome.MALFORMED_JSON, id="bytes-after-the-object"),
        pytest.param(body(tool(), id=2), Outcome.INVALID_ENVELOPE, id="another-id"),
        pytest.param(body(tool(), id=None), Outcome.INVALID_ENVELOPE, id="id-null"),
        pytest.param(body(tool(), jsonrpc="1.0"), Outcome.INVALID_ENVELOPE, id="not-2.0"),
        pytest.param(
            body(tool(), error={"code": -1, "message": "m"}),
            Outcome.INVALID_ENVELOPE,
            id="error-beside-the-result",
        ),
        pytest.param(
            body(error={"code": -32000, "message": "m", "data": BIG}),
            Outcome.JSONRPC_ERROR,
            id="a-large-error",
        ),
        pytest.param(body(tool(isError=True)), Outcome.TOOL_ERROR, id="isError-true"),
        pytest.param(body(tool(isError="no")), Outcome.INVALID_TOOL_RESULT, id="isError-text"),
        pytest.param(body({"content": BIG}), Outcome.INVALID_TOOL_RESULT, id="content-a-string"),
        pytest.param(
            body(tool(resultType="input_required", requestState="s")),
            Outcome.INPUT_REQUIRED,
            id="input-required",
        ),
        pytest.param(
            body(tool(resultType="later")), Outcome.INVALID_TOOL_RESULT, id="unknown-resultType"
        ),
        pytest.param(body(tool(), method="x"), Outcome.TOOL_SUCCESS, id="a-method-too"),
        pytest.param(b"[" + body(tool()) + b"]", Outcome.INVALID_ENVELOPE, id="a-batch"),
    ],
)
def test_a_large_body_with_a_bad_envelope_is_read_whole(answer: bytes, outcome: Outcome) -> None:
    assert len(answer) > ENVELOPE_BYTES
    verdict = classify(200, answer)
    assert verdict.outcome is outcome
    assert verdict.detail != ENVELOPE_ONLY
    assert verdict == classify_whole(answer)


def classify_whole(answer: bytes) -> Any:
    """The same body classified with the envelope path switched off."""
    with patch.object(quick_read, "ENVELOPE_BYTES", 1 << 40):
        return classify(200, answer)


def test_an_error_deep_in_the_document_is_content_not_the_envelope() -> None:
    deep = tool(structuredContent={"error": {"code": -1, "message": "in the data"}})
    verdict = classify(200, body(deep))
    assert (verdict.outcome, verdict.detail) == (Outcome.TOOL_SUCCESS, ENVELOPE_ONLY)
    quoted = classify(200, body(tool(BIG + '","error":{"code":1}}')))
    assert (quoted.outcome, quoted.detail) == (Outcome.TOOL_SUCCESS, ENVELOPE_ONLY)
    # The same words in the envelope are an error, read whole.
    assert classify(200, body(error={"code": -1, "message": BIG})).outcome is (
        Outcome.JSONRPC_ERROR
    )


def test_what_the_envelope_does_not_validate_and_the_record_says_so() -> None:
    """Invalid UTF-8 and a broken escape inside the content: read whole, MALFORMED_JSON;
    by the envelope, a success whose detail says the rest was not validated."""
    for broken in (b"\xff\xfe", b"\\q"):
        answer = body(tool()).replace(b"xxxx", broken, 1)
        assert classify_whole(answer).outcome is Outcome.MALFORMED_JSON
        verdict = classify(200, answer)
        assert (verdict.outcome, verdict.detail) == (Outcome.TOOL_SUCCESS, ENVELOPE_ONLY)


def test_escapes_braces_and_whitespace_in_the_skipped_values_are_walked() -> None:
    text = 'a \\" b {[ ]} \\\\' + BIG + '\\\\"}]'

    answer = json.dumps({"jsonrpc": "2.0", "id": 1, "result": tool(text)}, indent=2).encode()
    verdict = classify(200, answer)
    assert (verdict.outcome, verdict.detail) == (Outcome.TOOL_SUCCESS, ENVELOPE_ONLY)


def test_other_containers_are_skipped_by_msgspec_and_validated() -> None:
    """structuredContent of many small values is skipped in C (validated), not walked."""
    rows = {"rows": [{"id": n, "title": f"document {n}"} for n in range(20_000)]}
    verdict = classify(200, body(tool("t", structuredContent=rows)))
    assert (verdict.outcome, verdict.detail) == (Outcome.TOOL_SUCCESS, ENVELOPE_ONLY)
    repeated = classify(200, body(tool(structuredContent={"text": BIG})))  # walked: 4 tokens
    assert (repeated.outcome, repeated.detail) == (Outcome.TOOL_SUCCESS, ENVELOPE_ONLY)
    broken = body(tool("t", structuredContent=rows)).replace(b'"id": 7,', b'"id": tru,', 1)
    assert read_envelope(broken) is None
    assert classify(200, broken).outcome is Outcome.MALFORMED_JSON


def test_what_the_walk_gives_up_on_is_read_whole() -> None:
    many = {"content": [{"type": "text", "text": "y" * 100} for _ in range(5000)]}
    escaped_key = body(tool()).replace(b'"id"', b'"\\u0069d"')
    quoted = body(tool('a \\" b' * 100 + BIG))
    for answer in (body(many), escaped_key, quoted):
        assert len(answer) > ENVELOPE_BYTES
        assert read_envelope(answer) is None
        verdict = classify(200, answer)
        assert (verdict.outcome, verdict.detail) == (Outcome.TOOL_SUCCESS, None)


def test_the_envelope_is_a_small_json_text_of_the_same_members() -> None:
    answer = body(tool(isError=False), extra=[1, 2])
    envelope = read_envelope(answer)
    assert envelope is not None
    assert json.loads(envelope) == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"content": [], "isError": False},
        "extra": [1, 2],
    }
    assert TOKENS >= 10  # a tool result of a few items fits the budget


def test_a_large_sse_event_is_classified_by_its_envelope() -> None:
    event = b"event: message\r\ndata: " + body(tool()) + b"\r\n\r\n"
    tracker = StreamTracker(wire_id=1, caller_id=1, method="tools/call", max_event_bytes=1 << 24)
    handed = b"".join(tracker.feed(event[i : i + 65536]) for i in range(0, len(event), 65536))
    assert handed == event
    assert tracker.classification is not None
    assert tracker.classification.outcome is Outcome.TOOL_SUCCESS
    assert tracker.classification.detail is None  # want_message (the default): read whole
    quick = StreamTracker(
        wire_id=1, caller_id=1, method="tools/call", max_event_bytes=1 << 24, want_message=False
    )
    quick.feed(event)
    assert quick.classification is not None and quick.classification.detail == ENVELOPE_ONLY


def test_the_record_of_a_large_answer_says_which_check_was_made() -> None:
    answers = {"small": body(tool("s")), "large": body(tool())}

    def handler(request: httpx2.Request) -> httpx2.Response:
        size = json.loads(request.content)["params"]["name"]
        return httpx2.Response(
            200, headers={"content-type": "application/json"}, content=answers[size]
        )

    transport = RetryTransport(httpx2.MockTransport(handler))
    details = {}
    with httpx2.Client(transport=transport) as client:
        for size, answer in answers.items():
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": size}}
            response = client.post("http://mcp.test/mcp", json=call)
            assert response.content == answer  # handed on as it came
            record = get_record(response)
            assert record is not None and record.classification is not None
            assert record.classification.outcome is Outcome.TOOL_SUCCESS
            details[size] = record.attempts[-1].to_dict()["detail"]
    assert details == {"small": None, "large": ENVELOPE_ONLY}


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)
ENVELOPE_MEMBERS = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]),
        "id": st.sampled_from([1, 2, "1", None, True, 1.5]),
        "error": st.sampled_from([{"code": -1, "message": "m"}, "e"]),
        "method": st.just("notifications/x"),
        "other": JSON_VALUES,
    },
)
RESULTS = st.fixed_dictionaries(
    {},
    optional={
        "content": st.lists(JSON_VALUES, max_size=3) | JSON_VALUES,
        "isError": st.sampled_from([True, False, None, 0, "false"]),
        "resultType": st.sampled_from(["complete", "input_required", "x", None]),
        "requestState": st.just("s"),
        "structuredContent": JSON_VALUES,
    },
)


@given(members=ENVELOPE_MEMBERS, result=RESULTS | JSON_VALUES, indent=st.sampled_from([None, 1]))
@settings(max_examples=500, deadline=None)
def test_by_the_envelope_the_verdict_is_the_full_classifiers_on_valid_json(
    members: dict[str, Any], result: Any, indent: int | None
) -> None:
    """With the size made tiny, any valid JSON answer gets the outcome the full classifier
    gives; only a success's detail may differ, and only to say the envelope was read."""
    answer = json.dumps({**members, "result": result}, indent=indent).encode()
    expected = classify_message(json.loads(answer), 1, "tools/call")
    with patch.object(quick_read, "ENVELOPE_BYTES", 0):
        got = classify(200, answer)
    assert got.outcome is expected.outcome
    if got.detail == ENVELOPE_ONLY:
        assert got == attrs.evolve(expected, detail=ENVELOPE_ONLY)
    else:
        assert got == expected
