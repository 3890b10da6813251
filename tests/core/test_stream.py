"""Following one SSE answer as it flows (core/stream.py): bounded memory, event by event."""

from __future__ import annotations

import itertools
import json
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_safe_retry.core import sse
from mcp_safe_retry.core.stream import StreamTracker
from mcp_safe_retry.records import Outcome


def test_endless_sse_event_keeps_memory_bounded() -> None:
    tracker = StreamTracker(wire_id=1, caller_id=1, method="tools/call", max_event_bytes=1 << 20)
    chunk = b"x" * 65536
    tracemalloc.start()
    passed = 0
    for _ in range(160):  # 10 MiB without a single line break
        passed += len(tracker.feed(chunk))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 4 << 20
    assert passed >= 9 << 20  # handed on raw once over the limit, not held
    assert tracker.classification is not None
    assert tracker.classification.outcome is Outcome.MALFORMED_JSON


def test_a_large_answer_is_handed_on_in_the_chunks_it_came_in() -> None:
    """``pieces``: a 1 MiB answer event goes on as the very chunks that brought it (no
    copy), classified; ``feed`` joins the same pieces."""
    payload = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"content": [{"type": "text", "text": "x" * (1 << 20)}]},
        }
    ).encode()
    event = b"event: message\r\ndata: " + payload + b"\r\n\r\n"
    chunks = [event[i : i + 65536] for i in range(0, len(event), 65536)]
    tracker = StreamTracker(
        wire_id=1, caller_id=1, method="tools/call", max_event_bytes=4 << 20, want_message=False
    )
    handed = [piece for chunk in chunks for piece in tracker.pieces(chunk)]
    handed += tracker.finish_pieces()
    assert len(handed) == len(chunks) and all(a is b for a, b in zip(handed, chunks, strict=True))
    assert tracker.classification is not None
    assert tracker.classification.outcome is Outcome.TOOL_SUCCESS


def _message(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()


NOTE = _message({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"p": 1}})
ANSWER = _message({"jsonrpc": "2.0", "id": 7, "result": {"content": []}})
ERROR = _message({"jsonrpc": "2.0", "id": 7, "error": {"code": -1, "message": "no"}})
OTHER_ID = _message({"jsonrpc": "2.0", "id": 8, "result": {"content": []}})
REQUEST = _message({"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage"})
DATAS = st.sampled_from([NOTE, NOTE, NOTE, ANSWER, ERROR, OTHER_ID, REQUEST, b"{", b"", b" "])
EVENTS = st.tuples(
    st.sampled_from([b"", b"event: message"]),
    DATAS,
    st.sampled_from([b"\n", b"\n", b"\r\n", b"\r"]),
).map(lambda e: (e[0] + e[2] if e[0] else b"") + b"data: " + e[1] + e[2] + e[2])
STREAMS = st.lists(EVENTS | st.sampled_from([b": ping\n\n", b"id: 3\r\n"]), max_size=12).map(
    b"".join
)


def _follow(chunks: list[bytes], wire_id: Any, want_message: bool) -> tuple[Any, ...]:
    tracker = StreamTracker(
        wire_id=wire_id,
        caller_id=7,
        method="tools/call",
        max_event_bytes=1 << 20,
        want_message=want_message,
    )
    out = [piece for chunk in chunks for piece in tracker.pieces(chunk)]
    out += tracker.finish_pieces()
    return (
        b"".join(out),
        tracker.held_back(),
        tracker.classification,
        tracker.message,
        tracker.events,
        tracker.duplicates,
    )


@given(
    stream=STREAMS,
    cuts=st.lists(st.integers(0, 2000), max_size=6),
    wire_id=st.sampled_from([7, "w-7"]),
    want_message=st.booleans(),
)
@settings(max_examples=600, deadline=None)
def test_runs_of_plain_events_follow_as_events_one_by_one(
    stream: bytes, cuts: list[int], wire_id: Any, want_message: bool
) -> None:
    """The answer amid notifications, other ids, server requests, duplicates, malformed and
    blank events, keep-alives, in LF, CRLF and CR, cut anywhere: what is handed on, held
    back and found is the same as when every event is read line by line."""
    bounds = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    chunks = [stream[a:b] for a, b in itertools.pairwise(bounds)]
    got = _follow(chunks, wire_id, want_message)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sse, "plain_run", lambda chunk, pos: None)
        assert got == _follow(chunks, wire_id, want_message)


def test_the_answer_amid_notifications_cut_at_every_position() -> None:
    """A final response amid notifications in one run: handed on once, under the caller's
    id, the duplicate dropped, every other byte in order, whatever the cut."""
    notes = b"".join(b"data: " + NOTE + b"\n\n" for _ in range(3))
    wire = {"jsonrpc": "2.0", "id": "w-7", "result": {"content": []}}
    answer = b"event: message\ndata: " + _message(wire)
    stream = notes + answer + b"\n\n" + notes + answer + b"\n\n" + notes
    for at in range(len(stream) + 1):
        out, held, found, message, events, duplicates = _follow(
            [stream[:at], stream[at:]], "w-7", True
        )
        assert out == notes + b"event: message\ndata: " + ANSWER + b"\n\n" + notes + notes, at
        assert held == b""
        assert found is not None and found.outcome is Outcome.TOOL_SUCCESS
        assert message == wire  # as read; handed on under the caller's id
        assert (events, duplicates) == (11, 1)


def test_a_run_of_notifications_goes_on_as_one_piece() -> None:
    notes = b"".join(b"event: message\r\ndata: " + NOTE + b"\r\n\r\n" for _ in range(100))
    tracker = StreamTracker(wire_id=1, caller_id=1, method="tools/call", max_event_bytes=1 << 20)
    (piece,) = tracker.pieces(notes)
    assert piece is notes
    assert (tracker.events, tracker.classification) == (100, None)
