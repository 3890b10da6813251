"""Reading the few headers a shell needs from an httpx or httpx2 ``Headers``.

The reader takes httpx's own lower-cased triples where a probe of the class finds them and
falls back to the public ``raw`` pairs otherwise: both give the same answers, which are
those of one pass over the raw pairs (first of repeated names wins, latin-1 values).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import httpx
import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_safe_retry.core.events import Head
from mcp_safe_retry.shells import wiring
from mcp_safe_retry.shells.wiring import REQUEST_HEADERS, RESPONSE_HEADERS, head_of, header_values


class _RawOnly:
    """Headers with only the public ``raw`` pairs (no ``_list``)."""

    def __init__(self, pairs: list[tuple[bytes, bytes]]) -> None:
        self.raw = list(pairs)


class _OtherLayout(httpx.Headers):
    """An ``httpx.Headers`` whose ``_list`` is laid out differently: the probe refuses it."""

    def __init__(self, pairs: list[tuple[bytes, bytes]]) -> None:
        super().__init__(pairs)
        self._pairs = list(pairs)
        self._list = [(value, key, key) for key, value in pairs]  # not (raw, lower, value)

    @property
    def raw(self) -> list[tuple[bytes, bytes]]:
        return list(self._pairs)


KINDS: list[Any] = [httpx.Headers, httpx2.Headers, _RawOnly, _OtherLayout]


@pytest.fixture(params=KINDS, ids=lambda kind: f"{kind.__module__}.{kind.__name__}")
def kind(request: pytest.FixtureRequest) -> Any:
    return request.param


def test_mixed_case_names_are_found_under_lower_case_names(kind: Any) -> None:
    headers = kind(
        [
            (b"Host", b"mcp.test"),
            (b"Content-Type", b"application/json"),
            (b"MCP-Session-Id", b"s-1"),
            (b"mcp-PROTOCOL-version", b"2025-11-25"),
            (b"Accept", b"application/json, text/event-stream"),
        ]
    )
    assert header_values(headers, REQUEST_HEADERS) == {
        "content-type": "application/json",
        "mcp-session-id": "s-1",
        "mcp-protocol-version": "2025-11-25",
    }


def test_the_first_of_repeated_headers_wins(kind: Any) -> None:
    headers = kind(
        [
            (b"retry-after", b"3"),
            (b"Retry-After", b"30"),
            (b"mcp-session-id", b"first"),
            (b"MCP-SESSION-ID", b"second"),
        ]
    )
    assert header_values(headers, RESPONSE_HEADERS) == {
        "retry-after": "3",
        "mcp-session-id": "first",
    }


def test_values_are_decoded_as_latin_1_whatever_the_headers_encoding(kind: Any) -> None:
    # Headers.get would decode these as UTF-8 (all values fit it); the reader never does.
    headers = kind([(b"mcp-session-id", "é".encode()), (b"last-event-id", b"caf\xe9")])
    assert header_values(headers, REQUEST_HEADERS) == {
        "mcp-session-id": "\xc3\xa9",
        "last-event-id": "café",
    }


def test_absent_names_are_absent_and_presence_alone_counts(kind: Any) -> None:
    assert header_values(kind([]), RESPONSE_HEADERS) == {}
    headers = kind([(b"Content-Encoding", b""), (b"content-length", b"0")])
    assert header_values(headers, RESPONSE_HEADERS) == {
        "content-encoding": "",
        "content-length": "0",
    }


@pytest.mark.parametrize("library", [httpx, httpx2])
def test_a_value_set_on_the_headers_is_read_back(library: Any) -> None:
    # A shell writes a renewed session into the request's headers (Engine.caller_edits).
    headers = library.Headers([(b"Mcp-Session-Id", b"old"), (b"content-type", b"application/json")])
    headers["mcp-session-id"] = "new"
    assert header_values(headers, REQUEST_HEADERS)["mcp-session-id"] == "new"
    assert header_values(
        library.Request("POST", "http://x/", headers=headers).headers, REQUEST_HEADERS
    ) == {
        "mcp-session-id": "new",
        "content-type": "application/json",
    }


_NAMES = st.sampled_from(
    [b"content-type", b"mcp-session-id", b"retry-after", b"last-event-id", b"host", b"x-other"]
)
_MIXED_CASE = _NAMES.flatmap(
    lambda name: st.lists(st.booleans(), min_size=len(name), max_size=len(name)).map(
        lambda upper: bytes(
            c - 32 if flip and 97 <= c <= 122 else c for c, flip in zip(name, upper, strict=True)
        )
    )
)
_VALUES = st.binary(max_size=8).map(lambda value: value.replace(b"\r", b"").replace(b"\n", b""))


@given(st.lists(st.tuples(_MIXED_CASE, _VALUES), max_size=12))
def test_every_kind_answers_as_one_pass_over_the_raw_pairs(
    pairs: list[tuple[bytes, bytes]],
) -> None:
    for names in (REQUEST_HEADERS, RESPONSE_HEADERS):
        expected: dict[str, str] = {}
        for key, value in pairs:
            name = names.get(key.lower())
            if name is not None and name not in expected:
                expected[name] = value.decode("latin-1")
        for kind in KINDS:
            assert header_values(kind(pairs), names) == expected, kind


@given(st.lists(st.tuples(_MIXED_CASE, _VALUES), max_size=12), st.integers(100, 599))
def test_a_response_head_holds_what_the_one_pass_reads(
    pairs: list[tuple[bytes, bytes]], status: int
) -> None:
    """``head_of`` reads the response headers in one step of its own: the same values."""
    for kind in KINDS:
        values = header_values(kind(pairs), RESPONSE_HEADERS)
        head = head_of(SimpleNamespace(status_code=status, headers=kind(pairs)))
        assert head == Head(
            status,
            values.get("content-type"),
            values.get("retry-after"),
            values.get("mcp-session-id"),
            "content-encoding" in values,
            "content-length" in values,
        ), kind
        assert type(head) is Head


def test_httpx_and_httpx2_headers_are_read_from_their_lower_cased_triples() -> None:
    # The gain of the reader: if httpx changes its layout, the probe falls back to `raw`
    # (answers unchanged, see above) and this says the fast path is gone.
    for kind in KINDS:
        header_values(kind([(b"Content-Type", b"a/b")]), REQUEST_HEADERS)
    assert {httpx.Headers, httpx2.Headers} <= wiring._LOWER_LIST
    assert {_OtherLayout, _RawOnly} <= wiring._RAW_ONLY
    assert not wiring._LOWER_LIST & wiring._RAW_ONLY
