"""Recognise the common messages without building them (optional: needs msgspec).

Most answers are plain successes and most SSE events are notifications, and a
classification needs only a few of their fields. msgspec decodes those few into a typed
shape and only checks the rest as JSON, where a full parse builds every string and number.
Anything else (an error, an unusual shape, bytes msgspec would read differently) is
NOT_SURE: the full classifier decides, so the verdicts are the same with and without this
module (property tests hold it to that), except that a large success may be recognised
by its envelope alone (``Quick.ENVELOPE``, see ``envelope.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from operator import attrgetter, itemgetter
from typing import Any, Literal

from .envelope import ENVELOPE_BYTES, read_envelope
from .jsonrpc import RequestId, read_shape

__all__ = ["Quick", "not_requests", "quick_read"]

_decode: Callable[[bytes | bytearray], Any] | None
_decode_lines: Callable[[bytes | bytearray], Any] | None
try:
    import msgspec
except ImportError:  # pragma: no cover - depends on the environment
    _decode = _decode_lines = None
    _UNSET: Any = object()
else:
    _UNSET = msgspec.UNSET

    # The values a plain success may hold are typed, so msgspec refuses any other (and
    # the body is NOT_SURE): a request id is an int (never a bool) or a str, never null.
    # Checked as msgspec reads (in C), not after: a "jsonrpc" of "2.0" (required) and no
    # "error" member at all (a request or notification with one is NOT_SURE too, which
    # the full classifier then finds to be no answer, as REQUEST would have said).
    class _Result(msgspec.Struct, rename="camel"):
        result_type: Literal["complete"] | msgspec.UnsetType = msgspec.UNSET
        content: list[msgspec.Raw] | msgspec.UnsetType = msgspec.UNSET  # items not read
        is_error: Literal[False] | msgspec.UnsetType = msgspec.UNSET

    class _Message(msgspec.Struct):
        jsonrpc: Literal["2.0"]
        id: int | str | msgspec.UnsetType = msgspec.UNSET
        method: Any = msgspec.UNSET  # params not read
        result: _Result | msgspec.UnsetType = msgspec.UNSET
        error: msgspec.UnsetType = msgspec.UNSET  # present, even as null: refused

    _decode = msgspec.json.Decoder(_Message).decode
    # Many bodies at once, each the one element of an array on a line of its own.
    _decode_lines = msgspec.json.Decoder(tuple[_Message]).decode_lines


class Quick(Enum):
    """What a quick read could tell of one JSON text."""

    NOT_SURE = "not sure"  # anything but the three below: read it whole
    SUCCESS = "success"  # a plain success answering the expected id
    ENVELOPE = "success by the envelope"  # the same, the rest of a large body not validated
    REQUEST = "request"  # a JSON object with a "method": a notification or server request


def quick_read(body: bytes | bytearray, expected_id: RequestId, method: str) -> Quick:
    """SUCCESS when ``body`` is surely a plain success for ``expected_id``: a JSON-RPC 2.0
    result without "method", complete, and for ``tools/call`` a tool result with content
    and no error. REQUEST when it is a JSON-RPC 2.0 object with a "method" member and no
    "error" (its other members of the types a plain success would hold). Else NOT_SURE,
    which never means "failed" (see ``read_shape``).

    A body past ``ENVELOPE_BYTES`` is judged by its envelope alone when it can be read so
    (``envelope.read_envelope``): ENVELOPE instead of SUCCESS, all else the same.
    """
    envelope = len(body) > ENVELOPE_BYTES and read_envelope(body)  # None: unreadable so
    message = read_shape(_decode, envelope or body)
    if message is None:
        return Quick.NOT_SURE
    if message.method is not _UNSET:
        return Quick.REQUEST
    answered = message.id
    if (
        message.result is _UNSET
        or type(answered) is not type(expected_id)  # same_id's rule, the types being known
        or answered != expected_id
    ):
        return Quick.NOT_SURE
    if method != "tools/call":
        # A tasks/get answer is the outcome of the call that created its task: read whole.
        if method == "tasks/get":
            return Quick.NOT_SURE
        return Quick.ENVELOPE if envelope else Quick.SUCCESS
    if message.result.content is not _UNSET:
        return Quick.ENVELOPE if envelope else Quick.SUCCESS
    return Quick.NOT_SURE


def not_requests(bodies: list[bytes], expected_id: RequestId, method: str) -> list[int]:
    """The indices of those of ``bodies`` (the data of many SSE events) that ``quick_read``
    does not find a REQUEST in, in order: usually none.

    They are read in one decode when they can be: each as the one element of an array on a
    line of its own (``[body]``), which msgspec reads as it reads the body alone. No JSON
    value can span two such lines (``]`` then ``[`` is never JSON, and a string cannot
    hold a line end), and each line begins one, so n lines read as n values only if each
    is one, else the read fails and each body is read alone. So is a body past
    ``ENVELOPE_BYTES`` (read by its envelope).
    """
    messages = None
    if bodies and max(map(len, bodies)) <= ENVELOPE_BYTES:
        lines = b"".join((b"[", b"]\n[".join(bodies), b"]"))
        messages = read_shape(_decode_lines, lines)
    if messages is None or len(messages) != len(bodies):
        return [
            index
            for index, body in enumerate(bodies)
            if quick_read(body, expected_id, method) is not Quick.REQUEST
        ]
    # Those without "method", looked for in C: usually none.
    methods = list(map(_METHOD, map(_FIRST, messages)))
    found = []
    index = -1
    for _ in range(methods.count(_UNSET)):
        index = methods.index(_UNSET, index + 1)
        found.append(index)
    return found


_FIRST = itemgetter(0)
_METHOD = attrgetter("method")
