"""One table per classification rule, SSE bodies and charsets included."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_safe_retry import classify
from mcp_safe_retry.records import Classification, Layer, Outcome
from tests.helpers import sse_event

pytestmark = pytest.mark.usefixtures("json_backend")  # both JSON parsers


def _j(value: Any) -> bytes:
    return json.dumps(value).encode()


def result(id: Any = 1, **fields: Any) -> bytes:
    return _j({"jsonrpc": "2.0", "id": id, "result": fields})


def error(id: Any = 1, code: Any = -32602, message: Any = "bad") -> bytes:
    return _j({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})


TEXT = [{"type": "text", "text": "hi"}]

HTTP = [
    pytest.param(404, b"", "application/json", (Outcome.HTTP_ERROR, 404, None), id="404-empty"),
    pytest.param(
        404,
        _j({"jsonrpc": "2.0", "id": 1, "error": {"code": -32600, "message": "Session not found"}}),
        "application/json",
        (Outcome.JSONRPC_ERROR, 404, -32600),
        id="404-session-not-found-for-the-request",
    ),
    pytest.param(
        404,
        _j(
            {
                "jsonrpc": "2.0",
                "id": "server-error",
                "error": {"code": -32600, "message": "Session not found"},
            }
        ),
        "application/json",
        (Outcome.HTTP_ERROR, 404, -32600),
        id="404-error-for-another-id-keeps-code",
    ),
    pytest.param(
        400,
        _j({"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "No session"}}),
        "application/json; charset=utf-8",
        (Outcome.JSONRPC_ERROR, 400, -32000),
        id="400-code-with-charset-id-null",
    ),
    pytest.param(
        404,
        _j({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}}),
        "application/json",
        (Outcome.JSONRPC_ERROR, 404, -32601),
        id="2026-404-method-not-found",
    ),
    pytest.param(
        400,
        _j({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "Unknown tool"}}),
        "application/json",
        (Outcome.JSONRPC_ERROR, 400, -32602),
        id="2026-400-invalid-params",
    ),
    pytest.param(
        429,
        _j({"jsonrpc": "2.0", "id": 1, "result": None, "error": {"code": -32029, "message": "x"}}),
        "application/json",
        (Outcome.HTTP_ERROR, 429, -32029),
        id="429-result-null-and-error",
    ),
    pytest.param(
        500, b"<html>oops</html>", "text/html", (Outcome.HTTP_ERROR, 500, None), id="500-html"
    ),
    pytest.param(
        503, b"{bad", "application/json", (Outcome.HTTP_ERROR, 503, None), id="503-badjson"
    ),
    pytest.param(301, b"", None, (Outcome.REDIRECT, 301, None), id="redirect"),
    pytest.param(307, b"", None, (Outcome.REDIRECT, 307, None), id="redirect-307"),
    pytest.param(308, b"", "text/plain", (Outcome.REDIRECT, 308, None), id="redirect-308"),
    pytest.param(304, b"", None, (Outcome.HTTP_ERROR, 304, None), id="not-modified"),
    pytest.param(
        400,
        _j({"error": {"code": True, "message": "x"}}),
        "application/json",
        (Outcome.HTTP_ERROR, 400, None),
        id="bool-code-is-not-a-code",
    ),
]


@pytest.mark.parametrize(("status", "body", "ctype", "expected"), HTTP)
def test_http_status_first(
    status: int, body: bytes, ctype: str | None, expected: tuple[Any, ...]
) -> None:
    c = classify(status, body, content_type=ctype)
    assert (c.outcome, c.status, c.code) == expected
    # A JSON-RPC error for the request reads as that error, whatever the status came with.
    protocol = c.outcome is Outcome.JSONRPC_ERROR
    assert c.layer is (Layer.PROTOCOL if protocol else Layer.TRANSPORT)


CONTENT_TYPES = [
    pytest.param("application/json", Outcome.TOOL_SUCCESS, id="json"),
    pytest.param("Application/JSON", Outcome.TOOL_SUCCESS, id="case-insensitive"),
    pytest.param("application/json; charset=utf-8", Outcome.TOOL_SUCCESS, id="charset-utf8"),
    pytest.param('application/json;charset="UTF-8"', Outcome.TOOL_SUCCESS, id="quoted-charset"),
    pytest.param("text/html", Outcome.INVALID_ENVELOPE, id="html"),
    pytest.param("text/plain", Outcome.INVALID_ENVELOPE, id="plain"),
    pytest.param(None, Outcome.INVALID_ENVELOPE, id="missing"),
    pytest.param("", Outcome.INVALID_ENVELOPE, id="empty"),
    pytest.param("application/json; charset=klingon", Outcome.MALFORMED_JSON, id="unknown-charset"),
]


@pytest.mark.parametrize(("ctype", "outcome"), CONTENT_TYPES)
def test_content_type(ctype: str | None, outcome: Outcome) -> None:
    assert classify(200, result(content=TEXT), content_type=ctype).outcome is outcome


def test_latin1_charset_is_honoured() -> None:
    body = '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"caf\xe9"}]}}'
    c = classify(200, body.encode("latin-1"), content_type="application/json; charset=ISO-8859-1")
    assert c.outcome is Outcome.TOOL_SUCCESS


def test_utf16_body_is_parsed() -> None:
    body = result(content=TEXT).decode().encode("utf-16")
    assert (
        classify(200, body, content_type="application/json; charset=utf-16").outcome
        is Outcome.TOOL_SUCCESS
    )


ENVELOPES = [
    pytest.param(b"", Outcome.MALFORMED_JSON, id="empty-body"),
    pytest.param(b"null", Outcome.INVALID_ENVELOPE, id="null"),
    pytest.param(b"[1,2]", Outcome.INVALID_ENVELOPE, id="batch-array"),
    pytest.param(b'"str"', Outcome.INVALID_ENVELOPE, id="string"),
    pytest.param(
        _j({"id": 1, "result": {"content": []}}), Outcome.INVALID_ENVELOPE, id="no-jsonrpc"
    ),
    pytest.param(
        _j({"jsonrpc": "1.0", "id": 1, "result": {"content": []}}),
        Outcome.INVALID_ENVELOPE,
        id="v1",
    ),
    pytest.param(_j({"jsonrpc": "2.0", "id": 1}), Outcome.INVALID_ENVELOPE, id="neither"),
    pytest.param(result(id="1", content=[]), Outcome.INVALID_ENVELOPE, id="string-id-vs-int"),
    pytest.param(result(id=True, content=[]), Outcome.INVALID_ENVELOPE, id="true-is-not-1"),
    pytest.param(result(id=1.0, content=[]), Outcome.INVALID_ENVELOPE, id="float-id"),
    pytest.param(
        _j({"jsonrpc": "2.0", "result": {"content": []}}), Outcome.INVALID_ENVELOPE, id="no-id"
    ),
    pytest.param(error(code="x"), Outcome.INVALID_ENVELOPE, id="string-code"),
    pytest.param(error(code=1.5), Outcome.INVALID_ENVELOPE, id="float-code"),
    pytest.param(error(message=None), Outcome.INVALID_ENVELOPE, id="no-message"),
    pytest.param(
        _j({"jsonrpc": "2.0", "id": 1, "error": "boom"}), Outcome.INVALID_ENVELOPE, id="error-str"
    ),
    pytest.param(error(id=None), Outcome.JSONRPC_ERROR, id="error-with-null-id"),
    pytest.param(error(id=2), Outcome.INVALID_ENVELOPE, id="error-for-other-id"),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":' * 2000, Outcome.MALFORMED_JSON, id="truncated-deep"
    ),
    pytest.param(b"[" * 100_000 + b"]" * 100_000, Outcome.MALFORMED_JSON, id="deep-nesting"),
    pytest.param(b"\xff\xfe{", Outcome.MALFORMED_JSON, id="bad-bytes"),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1' + b"9" * 5000 + b',"result":{}}',
        Outcome.MALFORMED_JSON,
        id="huge-int",
    ),
]


@pytest.mark.parametrize(("body", "outcome"), ENVELOPES)
def test_envelope(body: bytes, outcome: Outcome) -> None:
    assert classify(200, body).outcome is outcome


RESULTS = [
    pytest.param({"content": TEXT}, Outcome.TOOL_SUCCESS, id="resultType-absent-is-complete"),
    pytest.param({"content": TEXT, "resultType": "complete"}, Outcome.TOOL_SUCCESS, id="complete"),
    pytest.param({"content": [], "isError": False}, Outcome.TOOL_SUCCESS, id="empty-content"),
    pytest.param(
        {"content": TEXT, "structuredContent": [1, 2]},
        Outcome.TOOL_SUCCESS,
        id="structured-any-json",
    ),
    pytest.param({"content": TEXT, "isError": True}, Outcome.TOOL_ERROR, id="isError"),
    pytest.param(
        {"content": TEXT, "isError": "true"}, Outcome.INVALID_TOOL_RESULT, id="isError-str"
    ),
    pytest.param(
        {"content": TEXT, "isError": None}, Outcome.INVALID_TOOL_RESULT, id="isError-null"
    ),
    pytest.param({"content": "x"}, Outcome.INVALID_TOOL_RESULT, id="content-str"),
    pytest.param({}, Outcome.INVALID_TOOL_RESULT, id="content-missing"),
    pytest.param(
        {"content": TEXT, "resultType": "partial"}, Outcome.INVALID_TOOL_RESULT, id="unknown-type"
    ),
    pytest.param({"content": TEXT, "resultType": 3}, Outcome.INVALID_TOOL_RESULT, id="type-int"),
    pytest.param(
        {"resultType": "input_required", "requestState": "abc"},
        Outcome.INPUT_REQUIRED,
        id="mrtr-state",
    ),
    pytest.param(
        {"resultType": "input_required", "inputRequests": {}},
        Outcome.INPUT_REQUIRED,
        id="mrtr-requests",
    ),
    pytest.param({"resultType": "input_required"}, Outcome.INVALID_TOOL_RESULT, id="mrtr-empty"),
]


@pytest.mark.parametrize(("fields", "outcome"), RESULTS)
def test_tool_result(fields: dict[str, Any], outcome: Outcome) -> None:
    assert classify(200, result(**fields)).outcome is outcome


@pytest.mark.parametrize("value", [None, [], "ok", 3, True])
def test_result_not_an_object(value: Any) -> None:
    body = _j({"jsonrpc": "2.0", "id": 1, "result": value})
    assert classify(200, body).outcome is Outcome.INVALID_TOOL_RESULT
    assert classify(200, body, method="tools/list").outcome is Outcome.INVALID_ENVELOPE


OTHER_METHODS = [
    pytest.param("tools/list", {"tools": []}, Outcome.RPC_SUCCESS, id="tools-list"),
    pytest.param("ping", {}, Outcome.RPC_SUCCESS, id="ping"),
    pytest.param(
        "resources/read",
        {"resultType": "input_required", "requestState": "s"},
        Outcome.INPUT_REQUIRED,
        id="read-mrtr",
    ),
    pytest.param(
        "prompts/get",
        {"resultType": "input_required", "requestState": "s"},
        Outcome.INPUT_REQUIRED,
        id="prompt-mrtr",
    ),
    pytest.param(
        "tools/list",
        {"resultType": "input_required", "requestState": "s"},
        Outcome.INVALID_ENVELOPE,
        id="mrtr-not-allowed",
    ),
    pytest.param(
        "initialize", {"protocolVersion": "2025-11-25"}, Outcome.RPC_SUCCESS, id="initialize"
    ),
]


@pytest.mark.parametrize(("method", "fields", "outcome"), OTHER_METHODS)
def test_other_methods(method: str, fields: dict[str, Any], outcome: Outcome) -> None:
    assert classify(200, result(**fields), method=method).outcome is outcome


def test_layers() -> None:
    assert classify(200, result(content=TEXT, isError=True)).layer is Layer.APPLICATION
    assert classify(200, error()).layer is Layer.PROTOCOL
    assert (
        classify(200, result(resultType="input_required", requestState="s")).layer
        is Layer.INTERACTION
    )
    assert classify(502, b"").layer is Layer.TRANSPORT


def test_error_details_are_kept_and_bounded() -> None:
    c = classify(200, error(code=-32001, message="x" * 10_000))
    assert c.code == -32001
    assert c.message is not None and len(c.message) == 500
    assert c.as_dict() == {"layer": "protocol", "outcome": "JSONRPC_ERROR", "code": -32001}


def test_tool_error_message_is_the_first_text() -> None:
    c = classify(
        200,
        result(content=[{"type": "image"}, {"type": "text", "text": "no such file"}], isError=True),
    )
    assert c.message == "no such file"


def test_str_body_is_accepted() -> None:
    assert classify(200, result(content=TEXT).decode()).outcome is Outcome.TOOL_SUCCESS


# -- notifications and 202 -------------------------------------------------------------


@pytest.mark.parametrize("status", [202, 200, 204])
def test_notification_accepted(status: int) -> None:
    c = classify(
        status, b"", content_type=None, expected_id=None, method="notifications/initialized"
    )
    assert c.outcome is Outcome.ACCEPTED


def test_notification_rejected() -> None:
    c = classify(400, b"", content_type=None, expected_id=None, method="notifications/initialized")
    assert (c.outcome, c.status) == (Outcome.HTTP_ERROR, 400)


def test_202_to_a_request_is_invalid() -> None:
    assert classify(202, b"", content_type=None).outcome is Outcome.INVALID_ENVELOPE


# -- SSE -------------------------------------------------------------------------------

SSE = "text/event-stream"
PROGRESS = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
SERVER_REQUEST = {"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage", "params": {}}
OTHER = {"jsonrpc": "2.0", "id": 2, "result": {"content": TEXT}}
MINE = {"jsonrpc": "2.0", "id": 1, "result": {"content": TEXT}}

SSE_CASES = [
    pytest.param(sse_event(MINE), Outcome.TOOL_SUCCESS, id="single"),
    pytest.param(
        b": keepalive\n\n"
        + b"id: p1\ndata:\n\n"
        + sse_event(PROGRESS)
        + sse_event(SERVER_REQUEST)
        + sse_event(OTHER)
        + sse_event(MINE),
        Outcome.TOOL_SUCCESS,
        id="skips-others",
    ),
    pytest.param(
        sse_event(PROGRESS) + sse_event(OTHER), Outcome.STREAM_INCOMPLETE, id="none-for-us"
    ),
    pytest.param(b"", Outcome.STREAM_INCOMPLETE, id="empty-stream"),
    pytest.param(
        sse_event(PROGRESS) + sse_event(MINE)[:-1],
        Outcome.STREAM_INCOMPLETE,
        id="unterminated-final",
    ),
    pytest.param(sse_event(MINE).replace(b"\n", b"\r\n"), Outcome.TOOL_SUCCESS, id="crlf"),
    pytest.param(sse_event(MINE).replace(b"\n", b"\r"), Outcome.TOOL_SUCCESS, id="cr"),
    pytest.param(
        b'event: message\ndata: {"jsonrpc":"2.0",\ndata: "id":1,"result":{"content":[]}}\n\n',
        Outcome.TOOL_SUCCESS,
        id="multi-line-data",
    ),
    pytest.param(b"data: {oops\n\n", Outcome.MALFORMED_JSON, id="bad-json-event"),
    pytest.param(
        sse_event({**MINE, "result": {"content": TEXT, "isError": True}}),
        Outcome.TOOL_ERROR,
        id="tool-error",
    ),
    pytest.param(
        sse_event({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "x"}}),
        Outcome.JSONRPC_ERROR,
        id="rpc-error",
    ),
    pytest.param(
        b"event: other\ndata: " + _j(MINE) + b"\n\n",
        Outcome.STREAM_INCOMPLETE,
        id="other-event-type",
    ),
    pytest.param(b"data:" + _j(MINE) + b"\n\n", Outcome.TOOL_SUCCESS, id="no-space-no-event-name"),
]


@pytest.mark.parametrize(("body", "outcome"), SSE_CASES)
def test_sse(body: bytes, outcome: Outcome) -> None:
    assert classify(200, body, content_type=SSE).outcome is outcome


def test_sse_with_charset_parameter() -> None:
    c = classify(200, sse_event(MINE), content_type="text/event-stream; charset=utf-8")
    assert c.outcome is Outcome.TOOL_SUCCESS


def test_sse_event_over_the_limit() -> None:
    body = b"data: " + b"x" * 2000 + b"\n\n"
    c = classify(200, body, content_type=SSE, max_event_bytes=1000)
    assert c.outcome is Outcome.MALFORMED_JSON
    assert c.detail is not None and "limit" in c.detail


def test_sse_response_before_a_huge_event_still_counts() -> None:
    body = sse_event(MINE) + b"data: " + b"x" * 5000 + b"\n\n"
    assert (
        classify(200, body, content_type=SSE, max_event_bytes=1000).outcome is Outcome.TOOL_SUCCESS
    )


def test_classification_is_a_frozen_value() -> None:
    c = classify(200, error())
    assert isinstance(c, Classification)
    with pytest.raises(AttributeError):
        c.outcome = Outcome.TOOL_SUCCESS  # type: ignore[misc]
