"""The envelope of a large JSON text, read without validating the values it skips.

A large answer is nearly all one member (a tool result's ``content``, a resource's text), and
no decision depends on whether that member is valid JSON: a malformed 2xx answer is never
retried. So past ``ENVELOPE_BYTES`` the quick reader may take its few fields from the
envelope alone: the top-level members, and the result's. Skipped values are walked, not
read: strings are jumped over quote to quote (``bytes.find``: their escapes and bytes, UTF-8
or not, are not checked), the ``content`` array bracket to bracket (so a long text in it
is jumped over, not scanned), any other container (``structuredContent``, ``_meta``, an
``error``) so too if that takes at most ``SKIM`` tokens, else skipped by msgspec, which
validates it in C at a fraction of the cost of walking many small values in Python. The
few values read are decoded by msgspec to the types ``quick_read`` expects. Anything
unusual (a key with an escape, more than ``TOKENS`` strings and brackets to walk, a text cut
short, bytes after the object) gives up: None, and the caller reads the body as it would
below the size.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["ENVELOPE_BYTES", "SKIM", "TOKENS", "read_envelope"]

ENVELOPE_BYTES = 256 * 1024
"""Bodies longer than this may be classified from their envelope. Measured with
``benchmarks/envelope.py``: the walk costs about what msgspec takes to read the shape of
64-128 KiB, whatever the size; at 256 KiB a one-item tool result is read in about a third
of the time, at 1 MiB in about a tenth, and a body the walk gives up on costs a few tokens
more than below the size."""

SKIM = 8
"""Tokens a container other than ``content`` is walked for before msgspec skips it."""

TOKENS = 32
"""Strings, brackets, escapes and skipped containers at most before giving up: the
envelope (about ten) and a tool result of up to three content items (about six each)."""

_skip: Callable[[memoryview], object] | None
try:
    import msgspec
except ImportError:  # pragma: no cover - depends on the environment
    _skip = None
else:
    _skip = msgspec.json.Decoder(msgspec.Raw).decode
_TRAILING = re.compile(r"trailing characters \(byte (\d+)\)")
_SPACE = re.compile(rb"[ \t\n\r]*")
_STRUCTURE = re.compile(rb'["{}\[\]]')
_SCALAR_END = re.compile(rb"[,}\] \t\n\r]")
_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_OPEN = {ord("{"): ord("}"), ord("["): ord("]")}


_Member = tuple[bytes, tuple[int, int], "list[Any] | None"]


class _GiveUp(Exception):
    """The envelope cannot be read cheaply or surely: read the body whole."""


class _OverBudget(_GiveUp):
    """More tokens than the walk may spend."""


class _Walk:
    """One body walked member by member, within a budget of tokens."""

    __slots__ = ("body", "left")

    def __init__(self, body: bytes | bytearray) -> None:
        self.body = body
        self.left = TOKENS

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise _OverBudget

    def space(self, pos: int) -> int:
        match = _SPACE.match(self.body, pos)
        assert match is not None  # matches the empty string at least
        return match.end()

    def string_end(self, pos: int) -> int:
        """Past the string whose opening quote is at ``pos``; its content is not checked."""
        body = self.body
        start = pos + 1
        while True:
            self.left -= 1
            if self.left < 0:
                raise _OverBudget
            quote = body.find(b'"', start)
            if quote < 0:
                raise _GiveUp  # cut short
            escapes = quote
            while escapes > start and body[escapes - 1] == _BACKSLASH:
                self.spend()
                escapes -= 1
            if (quote - escapes) % 2 == 0:  # the quote itself is not escaped
                return quote + 1
            start = quote + 1

    def value_end(self, pos: int, *, walk: bool = False) -> int:
        """Past the value that starts at ``pos`` (no whitespace before it). A container is
        walked bracket to bracket if ``walk`` (its long strings jumped over), else skipped
        by msgspec (validated in C: many small values are cheaper so)."""
        body = self.body
        if pos >= len(body):
            raise _GiveUp
        first = body[pos]
        if first == _QUOTE:
            return self.string_end(pos)
        closer = _OPEN.get(first)
        if closer is None:  # a number, true, false or null: up to what ends it
            match = _SCALAR_END.search(body, pos)
            end = len(body) if match is None else match.start()
            if end == pos:
                raise _GiveUp
            return end
        if walk:
            return self.walked(pos, closer)
        # A few tokens' walk first: a container of one long text (structuredContent that
        # repeats the text) is jumped over; one of many small values goes to msgspec.
        left = self.left
        self.left = min(left, SKIM)
        try:
            end = self.walked(pos, closer)
        except _OverBudget:
            self.left = left - SKIM
            return self.skipped(pos)
        self.left += left - min(left, SKIM)
        return end

    def walked(self, pos: int, closer: int) -> int:
        """Past the container at ``pos`` (closed by ``closer``), walked bracket to bracket."""
        body = self.body
        closers = [closer]
        scan = pos + 1
        while True:
            self.spend()
            match = _STRUCTURE.search(body, scan)
            if match is None:
                raise _GiveUp  # cut short
            at = match.start()
            char = body[at]
            if char == _QUOTE:
                scan = self.string_end(at)
                continue
            scan = at + 1
            if char in _OPEN:
                closers.append(_OPEN[char])
            elif closers.pop() != char:
                raise _GiveUp  # [} and the like
            elif not closers:
                return scan

    def skipped(self, pos: int) -> int:
        """Past the container at ``pos`` (and any whitespace after it), as msgspec reads
        it: a container followed by more is "trailing characters (byte N)" to it, the Nth
        byte the first after it."""
        self.spend()
        if _skip is None:
            raise _GiveUp
        view = memoryview(self.body)
        rest = view[pos:]
        try:
            _skip(rest)
        except ValueError as exc:  # msgspec.DecodeError
            found = _TRAILING.search(str(exc))
            if found is None:
                raise _GiveUp from None  # not JSON, or another wording: read it whole
            return pos + int(found.group(1)) - 1  # N counts from 1: the first byte after
        finally:
            rest.release()
            view.release()
        return len(self.body)

    def members(
        self, pos: int, into: bytes = b"", walked: bytes = b""
    ) -> tuple[list[_Member], int]:
        """The members of the object whose ``{`` is at ``pos`` (no whitespace before it):
        each key, its value's (start, end) and, for the key ``into`` if its value is an
        object, that object's members (its member ``content`` walked); in order; and the
        position past the object."""
        body = self.body
        space = _SPACE.match  # always matches (the empty string at least)
        startswith = body.startswith
        if not startswith(b"{", pos):
            raise _GiveUp
        found: list[_Member] = []
        pos = space(body, pos + 1).end()  # type: ignore[union-attr]
        if startswith(b"}", pos):
            return found, pos + 1
        while True:
            if not startswith(b'"', pos):
                raise _GiveUp
            key_end = self.string_end(pos)
            key = bytes(body[pos + 1 : key_end - 1])
            if b"\\" in key:
                raise _GiveUp  # an escaped name may spell one of ours
            pos = space(body, key_end).end()  # type: ignore[union-attr]
            if not startswith(b":", pos):
                raise _GiveUp
            start = space(body, pos + 1).end()  # type: ignore[union-attr]
            inner = None
            if key == into and startswith(b"{", start):
                inner, end = self.members(start, walked=b"content")
            else:
                end = self.value_end(start, walk=key == walked)
            found.append((key, (start, end), inner))
            pos = space(body, end).end()  # type: ignore[union-attr]
            if startswith(b"}", pos):
                return found, pos + 1
            if not startswith(b",", pos):
                raise _GiveUp
            pos = space(body, pos + 1).end()  # type: ignore[union-attr]


def read_envelope(body: bytes | bytearray) -> bytes | None:
    """The envelope of the JSON object ``body`` as a small JSON text of its own: the same
    members in the same order, each value kept as it is when it is short, else replaced by
    an empty one of its kind (``""``, ``[]``, ``{}``), except the ``result`` object, whose
    members are kept so. None if the envelope cannot be read so (see the module docstring).
    """
    walk = _Walk(body)
    try:
        top, end = walk.members(walk.space(0), into=b"result")
    except _GiveUp:
        return None
    if walk.space(end) != len(body):
        return None  # bytes after the object
    return _text(body, top)


def _text(body: bytes | bytearray, members: list[_Member]) -> bytes:
    parts = []
    for name, (start, stop), inner in members:
        if stop - start <= _SHORT:
            value = bytes(body[start:stop])
        elif inner is not None:
            value = _text(body, inner)
        else:
            value = _EMPTY.get(body[start], b"")
            if not value:  # a long number
                value = bytes(body[start:stop])
        parts.append(b'"' + name + b'":' + value)
    return b"{" + b",".join(parts) + b"}"


_SHORT = 256  # bytes of a value kept as it is
_EMPTY = {_QUOTE: b'""', ord("["): b"[]", ord("{"): b"{}"}
