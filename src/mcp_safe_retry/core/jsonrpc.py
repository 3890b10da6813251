"""JSON-RPC request facts (method, id, tool, arguments) and id rewriting, all pure."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, Literal, NamedTuple, TypeAlias

from .tasks import TASKS_EXTENSION, declares_tasks

_TASKS_NAME = TASKS_EXTENSION.encode()

_orjson_loads: Callable[[bytes | bytearray], Any] | None
try:  # optional: the same results, faster (see loads)
    import orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson_loads = None
else:
    _orjson_loads = orjson.loads


_decode_call: Callable[[bytes | bytearray], Any] | None
try:  # optional: reads a tools/call without building its arguments (see parse_request)
    import msgspec
except ImportError:  # pragma: no cover - depends on the environment
    _decode_call = None
    _SHAPE_ERRORS: tuple[type[Exception], ...] = ()
else:
    _SHAPE_ERRORS = (msgspec.DecodeError, RecursionError)  # ValidationError is a DecodeError

    # A tools/call as parse_request reads it quickly, checked by msgspec as it reads (in
    # C): anything else fails to decode, and parse_request reads it whole.
    class _CallParams(msgspec.Struct):
        name: str
        arguments: msgspec.Raw = msgspec.Raw()  # skipped, not built

    class _Call(msgspec.Struct):
        jsonrpc: Literal["2.0"]
        id: int | str  # neither a bool nor a float: a request id (see is_request_id)
        method: Literal["tools/call"]
        params: _CallParams

    _decode_call = msgspec.json.Decoder(_Call).decode

__all__ = [
    "FAST_PARSER_INSTALLED",
    "Digest",
    "RequestFacts",
    "RequestId",
    "answers_under",
    "dumps",
    "is_exact",
    "loads",
    "parse_request",
    "quick_call",
    "same_id",
    "use_fast_parser",
    "with_id",
]

RequestId: TypeAlias = str | int
JSON: TypeAlias = Any

_MAX_DEPTH_ERRORS = (ValueError, RecursionError, TypeError)

_fast_loads: Callable[[bytes | bytearray], Any] | None = _orjson_loads
FAST_PARSER_INSTALLED = _orjson_loads is not None
"""Whether orjson (the [fast] extra) is installed."""


def use_fast_parser(enabled: bool) -> bool:
    """Read JSON with orjson and the msgspec quick readers (True, the default when they are
    installed) or with the standard library alone (False); tests and benchmarks run both.

    Returns:
        Whether the fast readers were in use before.
    """
    global _fast_loads  # noqa: PLW0603 - one switch read on every parse
    before = _fast_loads is not None
    _fast_loads = _orjson_loads if enabled else None
    return before


# orjson reads an integer literal past 64 bits as a float where json keeps it exact; such a
# literal has at least 19 digits in a row, so bytes with such a run go to json.
_DIGITS_TO_ZERO = bytes(0x30 if 0x30 <= i <= 0x39 else 0x2E for i in range(256))
_LONG_NUMBER = b"0" * 19

_DUMPS = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_c_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
_canonical_chunks: Any = (
    None
    if _c_make_encoder is None
    else _c_make_encoder(
        None, None, json.encoder.encode_basestring_ascii, None, ":", ",", True, False, True
    )
)
_CANONICAL_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def _canonical(value: JSON) -> bytes:
    """``json.dumps(value, sort_keys=True, separators=(",", ":"))`` as bytes, with the C
    encoder that call builds each time built once (no circularity check: parsed JSON is a
    tree). Always the standard library's, so it reads the same whichever extras are
    installed (orjson writes floats and non-ASCII text differently)."""
    if _canonical_chunks is None:  # pragma: no cover - an interpreter without _json
        return _CANONICAL_ENCODER.encode(value).encode()
    return "".join(_canonical_chunks(value, 0)).encode()


def loads(data: bytes | bytearray | str, *, exact: bool = True) -> JSON:
    """Parse JSON; raises ValueError for anything that is not one JSON text.

    The result is always the standard library's: orjson, when installed, reads what it can
    read the same way (strict RFC 8259 UTF-8 without huge integers), and json reads the
    rest (NaN and Infinity, integers past 64 bits, UTF-16, a BOM, lone surrogates, errors).
    With ``exact=False`` the look for huge integers is skipped: such an integer may then come
    back as a float, but whether data parses, and the shape of what it holds, are the same.
    """
    fast = _fast_loads
    if (
        fast is not None
        and not isinstance(data, str)
        and (not exact or _LONG_NUMBER not in data.translate(_DIGITS_TO_ZERO))
    ):
        try:
            return fast(data)
        except ValueError:
            pass
    try:
        return json.loads(data)
    except _MAX_DEPTH_ERRORS as exc:  # RecursionError on absurd nesting, too
        raise ValueError(str(exc)) from None


def is_exact(data: bytes | bytearray | str) -> bool:
    """True when ``loads(data, exact=False)`` is sure to equal ``loads(data)``."""
    return (
        _fast_loads is None
        or isinstance(data, str)
        or _LONG_NUMBER not in data.translate(_DIGITS_TO_ZERO)
    )


def dumps(value: JSON) -> bytes:
    """Serialise compactly as UTF-8, the way MCP SDKs send messages."""
    return _DUMPS(value).encode()


def is_request_id(value: object) -> bool:
    """JSON-RPC ids we track: strings and integers (``true`` is not ``1``)."""
    if type(value) in _ID_TYPES:  # what a JSON reader gives: a type looked up, in C
        return True
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


_ID_TYPES = frozenset({str, int})


def same_id(a: object, b: object) -> bool:
    """Compare ids by JSON value: ``1`` and ``"1"`` differ, and so do ``1`` and ``true``."""
    kind = type(a)  # an exact str or int (what a JSON reader gives) is looked up in C
    return kind is type(b) and (kind in _ID_TYPES or is_request_id(a)) and a == b


def answers_under(
    message: dict[str, JSON], wire_id: RequestId | None, caller_id: RequestId
) -> bool:
    """Whether ``message`` answers a request that went out under ``wire_id`` instead of the
    caller's ``caller_id``, so the caller must be handed it with its own id back."""
    return not same_id(wire_id, caller_id) and same_id(message.get("id"), wire_id)


class _Hashed(NamedTuple):
    source: bytes  # the request's body
    message: dict[str, JSON] | None = None  # the body as read, if it was (perhaps inexact)


class Digest(_Hashed):
    """A hash of what makes two requests "the same call": the method and the params less
    ``_meta`` (so neither the id nor a progress token), as canonical JSON (keys sorted, the
    standard library's writing). One definition whichever reader took the request and
    whichever extras are installed, so the processes of a fleet agree.

    Worked out the first time it is read, then kept: most calls never need it (the re-send
    detector asks only once it holds a failed call, and only failures are recorded; a
    record asks when it is built). ``str(digest)`` is the hex value. A tuple of what it is
    worked out from (one is made per request, in C: ``tuple.__new__``), equal only to itself.
    """

    _value: str | None = None

    def __str__(self) -> str:
        value = self._value
        if value is None:
            value = self._value = _digest(self.source, self.message)
        return value

    def __repr__(self) -> str:
        return f"Digest({str(self)!r})"

    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__


_new = tuple.__new__
_NO_DIGEST = Digest(b"")


class RequestFacts(NamedTuple):
    """What the transport needs to know about one JSON-RPC message sent by the client (a
    tuple: one is made per request)."""

    method: str
    id: RequestId | None  # None: a notification
    tool: str | None = None  # params.name of a tools/call
    identity: Digest = _NO_DIGEST  # see ``digest``
    source: bytes = b""  # the body as sent
    # The message as read (integers past 64 bits perhaps as floats); None if not built.
    parsed: dict[str, JSON] | None = None

    def __repr__(self) -> str:  # never the body: it holds the arguments
        return (
            f"RequestFacts(method={self.method!r}, id={self.id!r}, tool={self.tool!r}, "
            f"digest={self.digest!r})"
        )

    @property
    def digest(self) -> str:
        """A hash of method, tool and arguments, never the arguments (see ``Digest``);
        worked out on the first read."""
        return str(self.identity)

    def declares_tasks(self) -> bool:
        """Whether a ``tools/call`` declares the Tasks extension in its ``_meta`` (so it may
        be answered with a task: core/tasks.py). Worked out when asked, which only a task
        answer does: the body is searched for the extension's name first."""
        if self.method != "tools/call" or _TASKS_NAME not in self.source:
            return False
        params = self.exact_message().get("params")
        return isinstance(params, dict) and declares_tasks(params.get("_meta"))

    def exact_message(self) -> dict[str, JSON]:
        """The message with exact integers, to be re-serialised or read (built if needed)."""
        if self.parsed is not None and is_exact(self.source):
            return self.parsed
        message: dict[str, JSON] = loads(self.source)
        return message


def parse_request(body: bytes) -> RequestFacts | None:
    """Read one client-to-server JSON-RPC request or notification.

    Returns None for anything else (batches, responses to server requests, non-JSON), which
    the transport then passes through untouched.

    A plain ``tools/call`` is read quickly, without building its arguments (the digest
    reads them if it is ever asked for), and has no ``parsed`` message: the shape is
    checked as msgspec reads it, a ``"2.0"`` request of ``tools/call`` under an integer or
    string id, with ``params`` an object naming the tool by a string. Anything else is
    read whole.
    """
    call = read_shape(_decode_call, body)
    if call is not None:
        # Every field in order, built in C (a NamedTuple's keyword-taking __new__ is Python).
        return _new(
            RequestFacts,
            ("tools/call", call.id, call.params.name, _new(Digest, (body, None)), body, None),
        )
    try:
        message = loads(body, exact=False)
        if isinstance(message, dict) and isinstance(message.get("id"), float):
            message = loads(body)  # perhaps an integer id past 64 bits: read it exactly
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    method = message.get("method")
    if not isinstance(method, str):
        return None
    if "id" in message:
        request_id = message["id"]
        if not is_request_id(request_id):
            return None
    else:
        request_id = None
    params = message.get("params")
    tool = None
    if method == "tools/call" and isinstance(params, dict):
        name = params.get("name")
        tool = name if isinstance(name, str) else None
    return RequestFacts(method, request_id, tool, Digest(body, message), body, message)


def read_shape(decode: Callable[[bytes | bytearray], Any] | None, body: bytes | bytearray) -> Any:
    """``decode(body)`` for a quick reader (a msgspec decoder of a typed shape), or None when
    it cannot be trusted to read as ``loads`` would: msgspec or orjson missing (beside orjson
    both refuse JSON nested past about a thousand levels, where the standard library's
    limit moves with the stack), bytes that are not UTF-8 (msgspec does not check the parts
    it skips), or bytes that are not JSON of that shape.
    """
    if decode is None or _fast_loads is None:
        return None
    if not body.isascii():
        try:
            body.decode()
        except UnicodeDecodeError:
            return None
    try:
        return decode(body)
    except _SHAPE_ERRORS:
        return None


def quick_call(body: bytes) -> RequestFacts | None:
    """What ``parse_request`` reads quickly (a plain ``tools/call``, no ``parsed`` message);
    None for anything it reads whole. A seam for the tests that hold the quick read to
    the full one; the transport calls ``parse_request``, which reads quickly in itself
    (a frame fewer per request)."""
    facts = parse_request(body)
    return facts if facts is not None and facts.parsed is None else None


def _digest(source: bytes, message: dict[str, JSON] | None) -> str:
    """``Digest``'s value for a request's body, read exactly (``message`` is used if it is
    exact already)."""
    try:
        if message is None or not is_exact(source):
            message = loads(source)
        method = message.get("method") if isinstance(message, dict) else None
        params = message.get("params") if isinstance(message, dict) else None
        if isinstance(params, dict) and "_meta" in params:
            params = {k: v for k, v in params.items() if k != "_meta"}
        canonical = _canonical([method, params])
    except (TypeError, ValueError, RecursionError):  # not JSON (made by hand), or too deep
        canonical = source
    return hashlib.blake2b(canonical, digest_size=12).hexdigest()


def with_id(message: dict[str, JSON], new_id: RequestId) -> bytes:
    """The same message with another id, serialised."""
    return dumps({**message, "id": new_id})
