"""Recognise a plain success without building the message (optional: needs msgspec).

Most answers are plain successes, and a classification needs only a few of their fields.
msgspec decodes those few into a typed shape and only checks the rest as JSON, where a full
parse builds every string and number of the result. Anything else (an error, an unusual
shape, bytes msgspec would read differently) gets None: the full classifier decides, so the
verdicts are the same with and without this module (a property test holds it to that).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._jsonrpc import RequestId, read_shape, same_id

__all__ = ["quick_success"]

_decode: Callable[[bytes], Any] | None
try:
    import msgspec
except ImportError:  # pragma: no cover - depends on the environment
    _decode = None
    _UNSET: Any = object()
else:
    _UNSET = msgspec.UNSET

    class _Result(msgspec.Struct, rename="camel"):
        result_type: Any = msgspec.UNSET
        content: list[msgspec.Raw] | msgspec.UnsetType = msgspec.UNSET  # items not read
        is_error: Any = msgspec.UNSET

    class _Answer(msgspec.Struct):
        jsonrpc: Any = msgspec.UNSET
        id: Any = msgspec.UNSET
        result: _Result | msgspec.UnsetType = msgspec.UNSET
        error: Any = msgspec.UNSET

    _decode = msgspec.json.Decoder(_Answer).decode


def quick_success(body: bytes, expected_id: RequestId, method: str) -> bool:
    """True when ``body`` is surely a plain success for ``expected_id``: a JSON-RPC 2.0
    result, complete, and for ``tools/call`` a tool result with content and no error.

    False means "not sure" (see ``read_shape``), never "failed".
    """
    answer = read_shape(_decode, body)
    if answer is None:
        return False
    result = answer.result
    if (
        answer.jsonrpc != "2.0"
        or answer.error is not _UNSET
        or result is _UNSET
        or not same_id(answer.id, expected_id)
    ):
        return False
    if result.result_type is not _UNSET and result.result_type != "complete":
        return False
    if method != "tools/call":
        return True
    is_error = result.is_error
    return result.content is not _UNSET and (is_error is _UNSET or is_error is False)
