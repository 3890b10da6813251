"""Following one SSE answer as it flows (core/stream.py): bounded memory, event by event."""

from __future__ import annotations

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
