"""Following one SSE answer as it flows (core/stream.py): bounded memory, event by event."""

from __future__ import annotations

import json
import tracemalloc

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
