"""The incremental SSE decoder against a reference decoder written plainly in this file.

The reference reads a whole stream at once, byte by byte, by the rules the decoder
documents (WHATWG event streams: lines end in CRLF, LF or CR; a blank line dispatches;
``data`` lines join with LF; ``id`` without NUL; ``retry`` digits only; ``:`` starts a
comment). The decoder must give the same events for any chunking and any mix of line
endings, a CR at the end of one chunk and its LF at the start of the next included.
"""

from __future__ import annotations

import itertools
import tracemalloc
from typing import NamedTuple
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_safe_retry.core import sse
from mcp_safe_retry.core.sse import Event, SSEDecoder, encode_event
from mcp_safe_retry.core.sse_plain import lone_event

CR, LF = 13, 10


class Decoded(NamedTuple):
    events: list[Event]
    pending: bytes
    last_event_id: str | None
    retry_ms: int | None


def reference(stream: bytes, *, ended: bool) -> Decoded:
    """Decode a whole stream; ``ended``: the stream is over, so a final CR ends a line."""
    events: list[Event] = []
    data: list[bytes] = []
    kind = ""
    event_id: str | None = None
    last_event_id: str | None = None
    retry_ms: int | None = None
    event_start = line_start = i = 0
    while i < len(stream):
        byte = stream[i]
        if byte not in (CR, LF):
            i += 1
            continue
        line = stream[line_start:i]
        if byte == CR and i + 1 == len(stream) and not ended:
            break  # may be the first half of a CRLF still to come
        i += 2 if byte == CR and stream[i + 1 : i + 2] == b"\n" else 1
        line_start = i
        if line:
            name, colon, value = line.partition(b":")
            if colon and value[:1] == b" ":
                value = value[1:]
            if not name:
                pass  # a comment
            elif name == b"data":
                data.append(value)
            elif name == b"event":
                kind = value.decode("utf-8", "replace")
            elif name == b"id" and b"\x00" not in value:
                event_id = last_event_id = value.decode("utf-8", "replace")
            elif name == b"retry" and value.isdigit():
                retry_ms = int(value)
            continue
        raw = stream[event_start:i]
        event_start = i
        if data:
            events.append(Event(b"\n".join(data), kind or "message", event_id, raw))
        else:
            events.append(Event(b"", "", event_id, raw))
        data, kind, event_id = [], "", None
    return Decoded(events, stream[event_start:], last_event_id, retry_ms)


def decode(chunks: list[bytes], *, limit: int = 1 << 20, ended: bool = True) -> Decoded:
    """The events as the reference gives them: a large event's raw chunks joined (that
    they are the very chunks fed is checked where it matters)."""
    decoder = SSEDecoder(limit)
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    if ended:
        events += decoder.finish()
    events = [joined(event) for event in events]
    return Decoded(events, decoder.pending(), decoder.last_event_id, decoder.retry_ms)


def joined(event: Event) -> Event:
    if isinstance(event.raw, tuple):
        return event._replace(raw=b"".join(event.raw))
    return event


EOLS = st.sampled_from([b"\n", b"\r\n", b"\r"])
TEXT = st.binary(max_size=12).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b""))
LINES = st.one_of(
    TEXT.map(lambda t: b"data: " + t),
    TEXT.map(lambda t: b"data:" + t),
    st.sampled_from(
        [
            b"",  # a blank line: dispatch
            b"",
            b"data",
            b"data: ",
            b"event: message",
            b"event:message",
            b"event: other",
            b"event",
            b"id: 7",
            b"id:",
            b"id: a\x00b",
            b"retry: 250",
            b"retry: 2x",
            b": keep-alive",
            b":",
            b"weird",
            b"data : spaced name",
            b"\xff\xfe: not utf-8",
            b"id: \xff",
        ]
    ),
)


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[bytes], list[bytes]]:
    """A stream as (lines, line endings), each line with its own ending."""
    lines = draw(st.lists(LINES, max_size=24))
    same = draw(st.booleans())  # one style for the whole stream, or a mix per line
    if same:
        eol = draw(EOLS)
        eols = [eol] * len(lines)
    else:
        eols = draw(st.lists(EOLS, min_size=len(lines), max_size=len(lines)))
    for i in range(len(lines) - 1):  # CR, then an empty line ended by LF, reads as one CRLF
        if eols[i] == b"\r" and lines[i + 1] == b"" and eols[i + 1] == b"\n":
            eols[i] = b"\r\n"
    return lines, eols


def join(lines: list[bytes], eols: list[bytes], tail: bytes = b"") -> bytes:
    return b"".join(line + eol for line, eol in zip(lines, eols, strict=True)) + tail


@st.composite
def chunked(draw: st.DrawFn, stream: bytes) -> list[bytes]:
    """``stream`` cut anywhere, and (half the time) also right after every CR, so that a
    CRLF's LF starts the next chunk."""
    cuts = set(draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    if draw(st.booleans()):
        cuts |= {i + 1 for i, byte in enumerate(stream) if byte == CR}
    bounds = sorted({0, len(stream), *cuts})
    return [stream[a:b] for a, b in itertools.pairwise(bounds)]


TAILS = st.sampled_from([b"", b"data: unterminated", b"data: x\r", b"\r", b"id: 9\r\n"])


@given(stream=streams(), tail=TAILS, ended=st.booleans(), data=st.data())
@settings(max_examples=600, deadline=None)
def test_same_events_as_the_reference_for_any_chunking(
    stream: tuple[list[bytes], list[bytes]], tail: bytes, ended: bool, data: st.DataObject
) -> None:
    whole = join(*stream, tail)
    chunks = data.draw(chunked(whole))
    assert decode(chunks, ended=ended) == reference(whole, ended=ended)


ONE_EVENT = st.tuples(
    st.sampled_from(
        [b"", b"event: message\n", b"event: message\r\n", b"event: other\n", b"id: 3\n"]
    ),
    st.sampled_from([b"data: ", b"data:", b"data:  "]),
    st.binary(max_size=12) | st.sampled_from([b"{}", b"x\ry", b"x\ny", b"\r", b"\n"]),
    st.sampled_from([b"\n\n", b"\r\n\r\n", b"\n\r\n", b"\r\n\n", b"\r\r", b"\n", b"\r\n"]),
).map(b"".join)


@given(before=streams(), event=ONE_EVENT, ended=st.booleans())
@settings(max_examples=600, deadline=None)
def test_a_chunk_that_is_one_whole_event_reads_as_the_reference(
    before: tuple[list[bytes], list[bytes]], event: bytes, ended: bool
) -> None:
    """A chunk that may be exactly one event (read without buffering) after any stream."""
    whole = join(*before)
    assert decode([whole, event], ended=ended) == reference(whole + event, ended=ended)
    assert decode([event], ended=ended) == reference(event, ended=ended)


NOISE = st.lists(
    st.sampled_from(
        [b"\r", b"\n", b"\r\n", b"\r\r", b"\n\r", b"data: x", b"data:", b"a", b":", b" ", b"id: 1"]
    ),
    max_size=40,
).map(b"".join)


@given(whole=NOISE, ended=st.booleans(), data=st.data())
@settings(max_examples=600, deadline=None)
def test_same_events_as_the_reference_on_line_end_noise(
    whole: bytes, ended: bool, data: st.DataObject
) -> None:
    chunks = data.draw(chunked(whole))
    assert decode(chunks, ended=ended) == reference(whole, ended=ended)


@given(stream=streams(), style=EOLS, data=st.data())
@settings(max_examples=300, deadline=None)
def test_line_ending_style_changes_only_the_raw_bytes(
    stream: tuple[list[bytes], list[bytes]], style: bytes, data: st.DataObject
) -> None:
    lines, eols = stream
    mixed = join(lines, eols)
    uniform = join(lines, [style] * len(lines))
    got = decode(data.draw(chunked(mixed)))
    want = decode(data.draw(chunked(uniform)))
    assert [e[:3] for e in got.events] == [e[:3] for e in want.events]
    assert (got.last_event_id, got.retry_ms) == (want.last_event_id, want.retry_ms)
    assert lf_only(got.pending) == lf_only(want.pending)


def lf_only(raw: bytes) -> bytes:
    return raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


@given(whole=NOISE | streams().map(lambda s: join(*s)), limit=st.integers(1, 120), data=st.data())
@settings(max_examples=600, deadline=None)
def test_every_byte_accounted_for_and_memory_bounded(
    whole: bytes, limit: int, data: st.DataObject
) -> None:
    """With a limit, the stream still comes back whole and in order; the events before the
    decoder gave up are the reference's first events."""
    decoder = SSEDecoder(limit)
    decoded: list[Event] = []
    handed: list[bytes] = []
    for chunk in data.draw(chunked(whole)):
        was_oversized = decoder.oversized
        events = decoder.feed(chunk)
        handed += [e.raw for e in events]
        if not was_oversized:
            decoded += events[:-1] if decoder.oversized else events
        assert len(decoder.pending()) <= limit
    was_oversized = decoder.oversized
    events = decoder.finish()
    handed += [e.raw for e in events]
    if not was_oversized:
        decoded += events
    assert b"".join(handed) + decoder.pending() == whole
    expected = reference(whole, ended=True).events
    assert decoded == expected[: len(decoded)]
    if not decoder.oversized:  # nothing given up: all of it decoded
        assert decoded == expected


@pytest.mark.parametrize(
    ("chunks", "events"),
    [
        pytest.param(
            [b"data: a\r", b"\n\r\n"],
            [Event(b"a", "message", None, b"data: a\r\n\r\n")],
            id="CRLF-split-over-chunks",
        ),
        pytest.param([b"data: a\r\n\r"], [], id="final-CR-waits-for-a-possible-LF"),
        pytest.param([b"data: a\r", b"\r"], [], id="CR-CR-waits-too"),
        pytest.param(
            [b"data: a\r", b"\r", b"x"], [Event(b"a", "message", None, b"data: a\r\r")], id="CR-CR"
        ),
        pytest.param(
            [b"data: a\n", b"data: b\r\n", b"\r"],
            [],
            id="mixed-waits-for-its-last-CR",
        ),
    ],
)
def test_a_cr_at_the_end_of_a_chunk_waits(chunks: list[bytes], events: list[Event]) -> None:
    assert decode(chunks, ended=False).events == events


def test_a_final_cr_ends_the_line_at_end_of_stream() -> None:
    decoded = decode([b"data: a\r\n", b"\r"], ended=True)
    assert decoded.events == [Event(b"a", "message", None, b"data: a\r\n\r")]
    assert decoded.pending == b""


def test_a_long_line_in_small_chunks_decodes_once() -> None:
    """A 1 MiB data line in 512-byte chunks, in each line-end style."""
    payload = b"x" * (1 << 20)
    for eol in (b"\n", b"\r\n", b"\r"):
        stream = b"event: message" + eol + b"data: " + payload + eol + eol
        chunks = [stream[i : i + 512] for i in range(0, len(stream), 512)]
        (event,) = decode(chunks, limit=4 << 20).events
        assert event == Event(payload, "message", None, stream)


@given(stream=streams(), tail=TAILS, ended=st.booleans(), data=st.data())
@settings(max_examples=400, deadline=None)
def test_data_handed_on_in_the_buffer_reads_as_the_reference(
    stream: tuple[list[bytes], list[bytes]], tail: bytes, ended: bool, data: st.DataObject
) -> None:
    """With the size past which a data line is left in the buffer made tiny, every event
    (a long line last in its event and the buffer, or followed by more) reads the same."""
    whole = join(*stream, tail)
    chunks = data.draw(chunked(whole))
    with patch.object(sse, "VIEW_BYTES", 1):
        assert decode(chunks, ended=ended) == reference(whole, ended=ended)


def test_a_large_event_is_handed_on_in_its_buffer_without_a_copy() -> None:
    """A 1 MiB event in 64 KiB chunks: its data is the decoder's buffer (a bytearray) and
    the decoder reads on in a fresh one; its raw bytes are the chunks it came in. One copy
    of the event in memory (the buffer), not three."""
    payload = b"{" + b"x" * (1 << 20) + b"}"
    stream = b"event: message\r\ndata: " + payload + b"\r\n\r\n"
    chunks = [stream[i : i + 65536] for i in range(0, len(stream), 65536)]
    decoder = SSEDecoder(4 << 20)
    tracemalloc.start()
    try:
        events = [event for chunk in chunks for event in decoder.feed(chunk)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [joined(event) for event in events] == [Event(payload, "message", None, stream)]
    assert type(events[0].data) is bytearray
    raw = events[0].raw
    assert isinstance(raw, tuple)  # the chunks as they came, the same objects, not joined
    assert len(raw) == len(chunks) and all(a is b for a, b in zip(raw, chunks, strict=True))
    assert peak < 1.5 * len(stream)
    assert decoder.feed(b"data: next\n\n") == [Event(b"next", "message", None, b"data: next\n\n")]


@pytest.mark.parametrize(
    "after",
    [b"id: 7\n\n", b"data: more\n\n", b": comment\n\n"],
    ids=["a field after it", "a second data line", "a comment after"],
)
def test_a_large_line_not_last_in_its_event_is_copied_out(after: bytes) -> None:
    """A long data line that is not all its event holds is read as before."""
    payload = b"y" * (sse.VIEW_BYTES + 1)
    whole = b"data: " + payload + b"\n" + after
    for chunks in ([whole], [whole[:100], whole[100:]], [b"data: " + payload + b"\n", after]):
        decoded = decode(chunks, ended=True)
        assert decoded == reference(whole, ended=True)
        assert type(decoded.events[0].data) is bytes


def test_a_large_event_ended_inside_a_chunk_is_handed_on_in_its_buffer() -> None:
    """An event pending from earlier chunks is read up to its end apart from the rest of
    the chunk that ends it, so it ends the buffer: its data is not copied out of it."""
    payload = b"y" * (sse.VIEW_BYTES + 1)
    whole = b"data: " + payload + b"\n\ndata: next\n\n"
    for chunks in ([whole[:100], whole[100:]], [whole[:-14], whole[-14:]]):
        decoded = decode(chunks, ended=True)
        assert decoded == reference(whole, ended=True)
        assert type(decoded.events[0].data) is bytearray
    (first, second) = decode([whole]).events  # one chunk: read as one run, no buffer
    assert type(first.data) is bytes and second.data == b"next"


def test_encode_event_round_trips() -> None:
    raw = encode_event(b'{"id":1}', event_id="e-1")
    assert decode([raw]).events == [Event(b'{"id":1}', "message", "e-1", raw)]


# -- plain events read together (``decode``'s runs) ---------------------------------------

DATA = st.sampled_from([b"{}", b'{"jsonrpc":"2.0","method":"n"}', b"", b" ", b"x" * 40])
PLAIN = st.tuples(
    st.sampled_from([b"", b"event: message"]), DATA, st.sampled_from([b"\n", b"\r\n"])
).map(lambda p: (p[0] + p[2] if p[0] else b"") + b"data: " + p[1] + p[2] + p[2])
OTHER = st.sampled_from(
    [
        b": keep-alive\n\n",
        b"id: 7\ndata: {}\n\n",
        b"data: {}\nid: 8\n\n",
        b"retry: 10\r\n\r\n",
        b"data: {}\r\r",  # CR only
        b"data: a\ndata: b\n\n",
        b"data: a\rb\n\n",
        b"event: message\r\ndata: {}\n\n",  # head and data end unlike
        b"event: message\ndata: {}\r\n\r\n",
        b"event: other\ndata: {}\n\n",
        b"data:{}\n\n",
        b"\n",
        b"\r\n",
        b"data: {}\n\r\n",
        b"data: {}\r\n\n",
    ]
)
MOSTLY_PLAIN = st.lists(PLAIN | PLAIN | OTHER, max_size=16).map(b"".join)


@given(whole=MOSTLY_PLAIN, tail=TAILS, ended=st.booleans(), data=st.data())
@settings(max_examples=800, deadline=None)
def test_plain_events_read_together_as_the_reference(
    whole: bytes, tail: bytes, ended: bool, data: st.DataObject
) -> None:
    """Streams of plain events (both heads, LF and CRLF) with other events among them
    (comments, ids, retry, CR-only, a CR inside data, unlike line ends), cut anywhere."""
    chunks = data.draw(chunked(whole + tail))
    assert decode(chunks, ended=ended) == reference(whole + tail, ended=ended)


HOSTILE = (
    b"event: message\ndata: {}\n\n"
    b"data: 1\n\n"
    b": ping\n\n"
    b"event: message\r\ndata: 2\r\n\r\n"
    b"event: message\r\ndata: 3\r\n\r\n"
    b"id: 4\r\ndata: 4\r\n\r\n"
    b"data: 5\r\r"
    b"data: 6\n\n"
    b"data: 7\n\n"
    b"retry: 9\n\n"
    b"data: \n\n"
    b"data: a\rb\n\n"
    b"data: 8\n\n"
)


@pytest.mark.parametrize("limit", [1 << 20, 40])
def test_plain_events_cut_at_every_position(limit: int) -> None:
    """Every cut of a hostile stream into two chunks, and into three at every other pair of
    positions, reads as the reference; so with a limit the events come near."""
    want = reference(HOSTILE, ended=True)
    n = len(HOSTILE)
    for a in range(n + 1):
        chunks = [HOSTILE[:a], HOSTILE[a:]]
        if limit > n:
            assert decode(chunks, limit=limit) == want, a
        else:
            assert accounted(chunks, limit), a
        for b in range(a, n + 1, 7):
            three = [HOSTILE[:a], HOSTILE[a:b], HOSTILE[b:]]
            if limit > n:
                assert decode(three, limit=limit) == want, (a, b)
            else:
                assert accounted(three, limit), (a, b)


def accounted(chunks: list[bytes], limit: int) -> bool:
    decoder = SSEDecoder(limit)
    raws = [joined(e).raw for c in chunks for e in decoder.feed(c)]
    raws += [e.raw for e in decoder.finish()]
    return b"".join(raws) + decoder.pending() == b"".join(chunks)  # type: ignore[arg-type]


def test_plain_events_come_as_one_run() -> None:
    """A chunk of plain events is one Run (so the tests above read runs), whose events are
    the reference's; a pending event is read up to its end first, and what follows the
    first event that is not plain is read line by line."""
    events = b"".join(b"event: message\r\ndata: " + bytes([48 + i]) + b"\r\n\r\n" for i in range(5))
    decoder = SSEDecoder()
    (run,) = decoder.decode(events)
    assert isinstance(run, sse.Run) and run.raw is events
    assert SSEDecoder().feed(events) == reference(events, ended=False).events
    assert run.size(1, 3) == len(events) * 2 // 5

    decoder = SSEDecoder()
    assert decoder.decode(b"data: {}\n\nda") == [
        sse.Run([b"{}"], b"data: {}\n\n", b"data: ", b"\n\n")
    ]
    assert decoder.decode(b"ta: x\n\ndata: 1\n\ndata: 2\n\n: c\n\ndata: 3\n\nd") == [
        Event(b"x", "message", None, b"data: x\n\n"),
        sse.Run([b"1", b"2"], b"data: 1\n\ndata: 2\n\n", b"data: ", b"\n\n"),
        Event(b"", "", None, b": c\n\n"),
        Event(b"3", "message", None, b"data: 3\n\n"),
    ]
    assert decoder.pending() == b"d"


@pytest.mark.parametrize(
    ("chunk", "data"),
    [
        pytest.param(b"data: {}\n\n", b"{}", id="lf"),
        pytest.param(b"event: message\r\ndata: {}\r\n\r\n", b"{}", id="crlf"),
        pytest.param(b"event: message\ndata: {}\r\n\r\n", b"{}", id="lf-head-crlf-data"),
        pytest.param(b"event: message\r\ndata: {}\n\n", None, id="crlf-head-lf-data"),
        pytest.param(b"data: \r\n\r\n", b"", id="empty-data"),
        pytest.param(b"data: a\rb\n\n", None, id="cr-inside-lf"),
        pytest.param(b"data: a\nb\r\n\r\n", None, id="lf-inside-crlf"),
        pytest.param(b"data: a\r\n\n", None, id="mixed-tail"),
        pytest.param(b"data: a\n\ndata: b\n\n", None, id="two-events"),
        pytest.param(b"id: 1\ndata: a\n\n", None, id="another-field"),
        pytest.param(b"data: a\n", None, id="unended"),
    ],
)
def test_lone_event_reads_exactly_one_plain_event(chunk: bytes, data: bytes | None) -> None:
    assert lone_event(chunk) == data


@given(stream=streams(), tail=TAILS, kind=st.sampled_from([bytearray, memoryview]), data=st.data())
@settings(max_examples=200, deadline=None)
def test_chunks_of_other_bytes_like_types_read_as_bytes(
    stream: tuple[list[bytes], list[bytes]], tail: bytes, kind: type, data: st.DataObject
) -> None:
    """A transport may hand on a bytearray or a memoryview: read as the same bytes."""
    whole = join(*stream, tail)
    chunks = data.draw(chunked(whole))
    decoder = SSEDecoder(1 << 20)
    events = [event for chunk in chunks for event in decoder.feed(kind(chunk))]
    events += decoder.finish()
    assert [
        (e.data, e.event, e.id, bytes(e.raw) if not isinstance(e.raw, tuple) else b"".join(e.raw))
        for e in events
    ] == [(e.data, e.event, e.id, e.raw) for e in reference(whole, ended=True).events]
