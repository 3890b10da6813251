"""The classifier: one JSON-RPC exchange judged layer by layer. Pure, total, never raises.

The order is the one that tells a person which layer failed: HTTP status, then Content-Type,
then JSON, then the JSON-RPC envelope, then the result (a tool result for ``tools/call``).
The verdicts are ``Classification`` values of ``core/outcomes.py``.
"""

from __future__ import annotations

from typing import Any

from .envelope import ENVELOPE_BYTES
from .headers import UTF8_CHARSETS, media_type
from .jsonrpc import JSON, RequestId, is_exact, loads, same_id
from .outcomes import ACCEPTED_REQUEST, Classification, Outcome, verdict
from .quick_read import Quick, not_requests, quick_read
from .results import (
    MESSAGE_LIMIT,
    TOOL_SUCCESS,
    Declared,
    created_task,
    is_int,
    polled_task,
    tool_result,
)
from .sse import DEFAULT_MAX_EVENT_BYTES, Run, SSEDecoder

__all__ = [
    "ENVELOPE_ONLY",
    "MRTR_METHODS",
    "OVERSIZED",
    "REDIRECT_STATUSES",
    "classify",
    "classify_answer",
    "classify_event",
    "classify_events",
    "classify_http_error",
    "classify_json",
    "classify_message",
    "error_in_body",
]

OVERSIZED = "SSE event larger than the limit"


# The quick verdicts as globals: loaded as such, not as attributes of the enum.
_SURE, _BY_ENVELOPE, _REQUEST = Quick.SUCCESS, Quick.ENVELOPE, Quick.REQUEST

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
"""The statuses an HTTP client follows to their Location (httpx's and httpx2's set). The
MCP SDKs follow 307 and 308 within the origin themselves; so does a client with
``follow_redirects``. The answer is a hop on the way, neither a failure nor a success."""

MRTR_METHODS = frozenset({"tools/call", "resources/read", "prompts/get"})


def classify(
    status: int,
    body: bytes | str,
    *,
    content_type: str | None = "application/json",
    expected_id: RequestId | None = 1,
    method: str = "tools/call",
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    tasks: Declared = False,
) -> Classification:
    """Classify one HTTP exchange that carried a JSON-RPC message.

    Args:
        status: the HTTP status code.
        body: the whole response body (for SSE, the whole stream as received).
        content_type: the response's Content-Type header.
        expected_id: the request's JSON-RPC id; None for a notification.
        method: the request's JSON-RPC method.
        max_event_bytes: an SSE event larger than this is not parsed.
        tasks: the request declared the Tasks extension (``core/tasks.py``): a
            ``tools/call`` may then be answered with a task.

    Returns:
        The Classification; this function never raises.
    """
    if isinstance(body, str):
        body = body.encode("utf-8", "surrogatepass")
    return classify_answer(
        status,
        body,
        content_type=content_type,
        expected_id=expected_id,
        method=method,
        max_event_bytes=max_event_bytes,
        want_message=False,
        tasks=tasks,
    )[0]


def classify_answer(
    status: int,
    body: bytes,
    *,
    content_type: str | None,
    expected_id: RequestId | None,
    method: str,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    want_message: bool = True,
    tasks: Declared = False,
) -> tuple[Classification, JSON]:
    """``classify`` in the rule order of the issue, returning the parsed JSON message too
    (None unless a 2xx JSON body was read) so a caller never parses the body twice.

    With ``want_message=False`` a plain success may be recognised without building the
    message (see ``quick_read``); the message is then None.
    """
    if status // 100 != 2:  # not 2xx
        return classify_http_error(status, body, content_type, expected_id), None
    if expected_id is None:
        return verdict(Outcome.ACCEPTED), None
    if status == 202:
        return ACCEPTED_REQUEST, None
    kind, charset = media_type(content_type)
    if kind == "application/json":
        if not want_message and charset in UTF8_CHARSETS:
            quick = quick_read(body, expected_id, method)
            if quick is _SURE:
                return _SUCCESS[method], None
            if quick is _BY_ENVELOPE:
                return _SUCCESS_BY_ENVELOPE[method], None
        return classify_json(body, charset, expected_id, method, exact=False, tasks=tasks)
    if kind == "text/event-stream":
        return classify_sse(body, expected_id, method, max_event_bytes, tasks), None
    detail = f"unexpected Content-Type {kind or 'none'!r}"
    return verdict(Outcome.INVALID_ENVELOPE, detail=detail), None


def classify_http_error(
    status: int, body: bytes, content_type: str | None, expected_id: RequestId | None = None
) -> Classification:
    """A non-2xx answer. One whose body is a JSON-RPC error for the request (its id, or null:
    a server that could not read the id) reads as that error, at the protocol layer, the
    status kept (2026-07-28 servers answer a JSON-RPC error with the status it maps to: 400
    for -32602, 404 for -32601); any other JSON-RPC error inside the body keeps its code and
    message on the ``HTTP_ERROR``. A redirect is a hop (``REDIRECT``), not an error."""
    if status in REDIRECT_STATUSES:
        return verdict(Outcome.REDIRECT, status=status)
    code = message = None
    found = _error_message(body, content_type)
    if found is not None:
        payload, error = found
        code = error["code"]
        if isinstance(error.get("message"), str):
            message = error["message"][:MESSAGE_LIMIT]
        answered = payload.get("id", ...)
        if (
            expected_id is not None
            and message is not None
            and "result" not in payload  # a well-formed error response (awslabs/mcp #2949)
            and (answered is None or same_id(answered, expected_id))
        ):
            return verdict(Outcome.JSONRPC_ERROR, status=status, code=code, message=message)
    return verdict(Outcome.HTTP_ERROR, status=status, code=code, message=message)


def error_in_body(body: bytes, content_type: str | None) -> dict[str, JSON] | None:
    """The JSON-RPC ``error`` object a (non-2xx) JSON body holds, if it holds one with an
    integer code; else None."""
    found = _error_message(body, content_type)
    return None if found is None else found[1]


def _error_message(
    body: bytes, content_type: str | None
) -> tuple[dict[str, JSON], dict[str, JSON]] | None:
    """The JSON object a (non-2xx) JSON body holds and its ``error`` object, if it holds one
    with an integer code; else None."""
    if not body or media_type(content_type)[0] != "application/json":
        return None
    try:
        payload = loads(body)
    except ValueError:
        return None
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict) and is_int(error.get("code")):
        return payload, error
    return None


def classify_json(
    body: bytes,
    charset: str | None,
    expected_id: RequestId,
    method: str,
    *,
    exact: bool = True,
    tasks: Declared = False,
) -> tuple[Classification, JSON]:
    """Classify a whole ``application/json`` body; returns the parsed message too.

    With ``exact=False`` the body is read without the look for integers past 64 bits (see
    ``loads``), so such an integer may come back as a float, except in the id and the error
    code: the classification is always exact.
    """
    try:
        text: bytes | str = body
        if charset not in UTF8_CHARSETS:
            text = body.decode(charset or "utf-8")
        message = loads(text, exact=exact)
        if not exact and _loose_id_or_code(message) and not is_exact(text):
            message = loads(text)
    except (ValueError, LookupError):  # bad JSON, bad bytes, unknown charset
        return verdict(Outcome.MALFORMED_JSON), None
    return classify_message(message, expected_id, method, tasks), message


def _loose_id_or_code(message: JSON) -> bool:
    """True if the numbers a classification reads (id, error code) may have been rounded."""
    if not isinstance(message, dict):
        return False
    error = message.get("error")
    return isinstance(message.get("id"), float) or (
        isinstance(error, dict) and isinstance(error.get("code"), float)
    )


def classify_sse(
    body: bytes, expected_id: RequestId, method: str, max_event_bytes: int, tasks: Declared = False
) -> Classification:
    """Classify the response to ``expected_id`` inside a whole SSE body."""
    decoder = SSEDecoder(max_event_bytes)
    for block in decoder.decode(body) + decoder.finish():
        if isinstance(block, Run):
            hits = classify_events(
                block.datas, expected_id, method, want_message=False, tasks=tasks
            )
            found = hits[0][1] if hits else None
        else:
            found = classify_event(
                block.data, block.event, expected_id, method, want_message=False, tasks=tasks
            )
        if found is not None:
            return found[0]
    if decoder.oversized:
        return verdict(Outcome.MALFORMED_JSON, detail=OVERSIZED)
    return verdict(Outcome.STREAM_INCOMPLETE, detail="no response for the request in the stream")


def classify_event(
    data: bytes | bytearray,
    event_type: str,
    expected_id: RequestId,
    method: str,
    *,
    want_message: bool = True,
    tasks: Declared = False,
) -> tuple[Classification, Any] | None:
    """Classify one SSE event if it answers ``expected_id``; None if it is for someone else.

    Returns:
        The classification and the parsed message, or None for keep-alives, notifications,
        server requests and responses to other ids. With ``want_message=False`` a plain
        success may be recognised without building the message, which is then None.
    """
    if event_type != "message":
        return None
    quick = quick_read(data, expected_id, method)  # blank data is NOT_SURE: asked after
    if quick is _REQUEST:
        return None  # a notification or a server request: not our answer
    if not want_message:
        if quick is _SURE:
            return _SUCCESS[method], None
        if quick is _BY_ENVELOPE:
            return _SUCCESS_BY_ENVELOPE[method], None
    if not data or data.isspace():  # blank: nothing to read
        return None
    try:
        # Most events are notifications: their shape (numbers play no part) is all we need.
        message = loads(data, exact=False)
    except ValueError:
        return verdict(Outcome.MALFORMED_JSON, detail="an SSE event is not JSON"), None
    if not isinstance(message, dict) or "method" in message:
        return None  # a notification or a server request: not our answer
    if not is_exact(data):
        message = loads(data)  # ids, codes and a re-sent body need exact integers
    if "id" in message and message["id"] is not None and not same_id(message["id"], expected_id):
        return None  # a response to another request
    return classify_message(message, expected_id, method, tasks), message


def classify_events(
    datas: list[bytes],
    expected_id: RequestId,
    method: str,
    *,
    want_message: bool = True,
    tasks: Declared = False,
) -> list[tuple[int, tuple[Classification, Any]]]:
    """``classify_event`` of the data of many ``message`` events (an SSE ``Run``): the
    index and finding of each it does not find None for, in order; usually none (the
    notifications are told apart together, see ``not_requests``)."""
    found = []
    for index in not_requests(datas, expected_id, method):
        answer = classify_event(
            datas[index], "message", expected_id, method, want_message=want_message, tasks=tasks
        )
        if answer is not None:
            found.append((index, answer))
    return found


def classify_message(
    message: JSON, expected_id: RequestId, method: str, tasks: Declared = False
) -> Classification:
    """Classify a parsed JSON-RPC response: envelope first, then the result (``tasks``: the
    request declared the Tasks extension)."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return verdict(Outcome.INVALID_ENVELOPE, detail="not a JSON-RPC 2.0 object")
    has_result, has_error = "result" in message, "error" in message
    if has_result == has_error:
        return verdict(Outcome.INVALID_ENVELOPE, detail="needs exactly one of result and error")
    response_id = message.get("id", ...)
    if has_error:
        # JSON-RPC 2.0: a server that could not read the request's id answers with id null.
        if response_id is not None and not same_id(response_id, expected_id):
            return verdict(Outcome.INVALID_ENVELOPE, detail="response id does not match")
        error = message["error"]
        if (
            not isinstance(error, dict)
            or not is_int(error.get("code"))
            or not isinstance(error.get("message"), str)
        ):
            return verdict(Outcome.INVALID_ENVELOPE, detail="malformed error object")
        return verdict(
            Outcome.JSONRPC_ERROR, code=error["code"], message=error["message"][:MESSAGE_LIMIT]
        )
    if not same_id(response_id, expected_id):
        return verdict(Outcome.INVALID_ENVELOPE, detail="response id does not match")
    return _classify_result(message["result"], method, tasks)


# Frozen values, so the common verdicts are shared rather than built per call.
_RPC_SUCCESS = verdict(Outcome.RPC_SUCCESS, result_type="complete")


class _ByMethod(dict[str, Classification]):
    """A plain success's verdict by the request's method: ``tool`` for ``tools/call``, else
    ``other``. Looked up by subscript, in C: a function would be a frame per answer."""

    def __init__(self, tool: Classification, other: Classification) -> None:
        super().__init__({"tools/call": tool})
        self._other = other

    def __missing__(self, method: str) -> Classification:
        return self._other


_SUCCESS = _ByMethod(TOOL_SUCCESS, _RPC_SUCCESS)


ENVELOPE_ONLY = (
    f"classified by its envelope: the rest of a body over {ENVELOPE_BYTES // 1024} KiB"
    " was not validated"
)
"""The ``detail`` of a success recognised by its envelope alone (``quick_read``), so a
reader of the record can tell; no other verdict carries it."""
_TOOL_BY_ENVELOPE = verdict(Outcome.TOOL_SUCCESS, result_type="complete", detail=ENVELOPE_ONLY)
_RPC_BY_ENVELOPE = verdict(Outcome.RPC_SUCCESS, result_type="complete", detail=ENVELOPE_ONLY)


_SUCCESS_BY_ENVELOPE = _ByMethod(_TOOL_BY_ENVELOPE, _RPC_BY_ENVELOPE)


def _classify_result(result: JSON, method: str, tasks: Declared = False) -> Classification:
    invalid = Outcome.INVALID_TOOL_RESULT if method == "tools/call" else Outcome.INVALID_ENVELOPE
    if not isinstance(result, dict):
        return verdict(invalid, detail="result is not an object")
    # 2026-07-28: "clients MUST treat an absent resultType as complete".
    result_type = result.get("resultType", "complete")
    if result_type == "input_required" and method in MRTR_METHODS:
        if "inputRequests" not in result and "requestState" not in result:
            return verdict(invalid, detail="input_required without inputRequests or requestState")
        return verdict(Outcome.INPUT_REQUIRED, result_type=result_type)
    if result_type == "task" and method == "tools/call":
        return created_task(result, tasks if isinstance(tasks, bool) else tasks())
    if result_type != "complete":
        return verdict(invalid, detail=f"unrecognised resultType {str(result_type)[:40]!r}")
    if method == "tasks/get":
        return polled_task(result)
    if method != "tools/call":
        return _RPC_SUCCESS
    return tool_result(result, result_type)
