"""What the network told a call (core/events.py): the head it reads, and which answers are
streamed on as they flow rather than read whole."""

from __future__ import annotations

import json

import pytest

from mcp_safe_retry.core.events import Head, streams
from mcp_safe_retry.core.jsonrpc import parse_request

REQUEST = parse_request(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode())
NOTIFICATION = parse_request(json.dumps({"jsonrpc": "2.0", "method": "notifications/x"}).encode())


@pytest.mark.parametrize(
    ("head", "streamed"),
    [
        (Head(200, "text/event-stream"), True),
        (Head(200, "Text/Event-Stream; charset=utf-8"), True),
        (Head(206, "text/event-stream"), True),
        (Head(200, "application/json"), False),
        (Head(200), False),
        (Head(503, "text/event-stream"), False),  # an error is read whole, to be judged
        (Head(404, "text/event-stream"), False),
    ],
)
def test_only_a_2xx_sse_answer_to_a_request_streams(head: Head, streamed: bool) -> None:
    assert REQUEST is not None and NOTIFICATION is not None
    assert streams(head, REQUEST) is streamed
    assert streams(head, NOTIFICATION) is False  # a notification's answer is never streamed


def test_a_head_is_a_small_value_with_defaults() -> None:
    assert Head(200) == Head(200, None, None, None, False, False)
    assert Head(200, session_id="s").session_id == "s"
