"""The HTTP+SSE transport of 2024-11-05 (the "legacy" one): where a POST's answer goes.

That transport's client opens ``GET /sse``, receives an ``endpoint`` event naming where to
POST, and POSTs every message there; each POST is answered ``202 Accepted`` with no body and
its response travels on the GET's event stream. Both official SDKs' ``sse_client`` read only
that stream, and their POST writer only logs a failed POST (mcp 2.x stops sending
altogether). So a failure the transport contains for such a POST (a circuit held open, a
connection dropped, a duplicate held, an HTTP error) must be put on the event stream, as a
JSON-RPC error event for that request's id, or the caller waits for good.

``LegacyStreams`` is the per-transport table of the event streams open, by the endpoint URL
they announced, each with what delivers an event into it (the shell's: kept and handed back,
never called here). ``Endpoint`` follows the first event of a GET's stream to learn whether
it is such a stream, and where its POSTs go.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from .jsonrpc import RequestId, loads, with_id
from .sse import Event, SSEDecoder, encode_event

__all__ = ["ENDPOINT_EVENT", "Deliver", "Endpoint", "LegacyStreams"]

ENDPOINT_EVENT = "endpoint"
"""The first event of an HTTP+SSE stream: its data is the URI the client POSTs to."""

Deliver = Callable[[bytes], None]
"""Puts one whole SSE event on an event stream, between two of the server's events."""


class Endpoint:
    """Reads the start of a GET's event stream: its first event tells whether it is an
    HTTP+SSE stream (an ``endpoint`` event) and where its POSTs go.

    Args:
        restore: the caller's id for a request re-sent under a fresh one (the answer to a
            re-sent POST comes on the stream under the id it went out with).
        max_event_bytes: a first event longer than this is not one (the stream is not read
            further).
    """

    def __init__(
        self,
        restore: Callable[[str], RequestId | None] | None = None,
        max_event_bytes: int = 16 * 1024 * 1024,
    ) -> None:
        self._decoder = SSEDecoder(max_event_bytes)
        self._restore = restore
        self.decided = False
        self.uri: str | None = None  # the endpoint's URI, as the event gave it

    def pieces(self, chunk: bytes) -> list[tuple[bytes, ...]]:
        """The blocks ``chunk`` completes, each as the raw pieces it is handed on in (the
        stream's own bytes, in order: a block is never split by an event put between),
        deciding as soon as the first event (not a comment) is complete. Once the decoder
        gave up (an event past the limit), each chunk is one block of its own."""
        blocks = self._decoder.feed(chunk)
        if self._decoder.oversized:
            self.decided = True
        pieces: list[tuple[bytes, ...]] = []
        for block in blocks:
            if not self.decided and (block.data or block.event):
                self.decided = True
                if block.event == ENDPOINT_EVENT:
                    self.uri = bytes(block.data).decode("utf-8", "replace").strip() or None
            if self._restore is not None and block.event == "message" and _FRESH in block.data:
                restored = self._restored(block)
                if restored is not None:
                    pieces.append((restored,))
                    continue
            pieces.append(_raw(block))
        return pieces

    def _restored(self, block: Event) -> bytes | None:
        """The answer to a request re-sent under a fresh id, under the caller's id again
        (one event of the same type); None for any other event."""
        try:
            message = loads(block.data)
        except ValueError:
            return None
        if not isinstance(message, dict) or "method" in message:
            return None
        wire_id = message.get("id")
        if not isinstance(wire_id, str) or self._restore is None:
            return None
        caller_id = self._restore(wire_id)
        if caller_id is None:
            return None
        return encode_event(with_id(message, caller_id), event_id=block.id)

    @property
    def oversized(self) -> bool:
        """Whether the decoder gave up (an event past the limit): its bytes come back raw."""
        return self._decoder.oversized

    def rest(self) -> bytes:
        """The bytes still held (an event not finished): handed on as they came, at the
        stream's end or once the stream is known not to be an HTTP+SSE one."""
        blocks = self._decoder.finish()
        return b"".join(b"".join(_raw(block)) for block in blocks) + self._decoder.pending()


_FRESH = b'"mcp-safe-retry-'  # how the ids of re-sent requests begin (Engine.fresh_id)


def _raw(block: Event) -> tuple[bytes, ...]:
    raw = block.raw
    return raw if isinstance(raw, tuple) else (raw,)


class LegacyStreams:
    """A transport's HTTP+SSE event streams that are open, by the endpoint URL each
    announced (the URL its POSTs go to, joined as the client joins it); safe across threads.
    Empty for every other transport, so asking costs nothing there."""

    def __init__(self, capacity: int = 1024) -> None:
        self.streams: dict[str, Deliver] = {}  # read as a flag on every POST: empty, none
        self._lock = threading.Lock()
        self._capacity = capacity
        self._callers: OrderedDict[str, RequestId] = OrderedDict()  # wire id -> caller's

    def resent(self, wire_id: str, caller_id: RequestId) -> None:
        """A request went out again under ``wire_id``: its answer, if it comes on an event
        stream, is handed on under ``caller_id`` (the newest ``capacity`` remembered)."""
        with self._lock:
            self._callers[wire_id] = caller_id
            while len(self._callers) > self._capacity:
                self._callers.popitem(last=False)

    def caller_of(self, wire_id: str) -> RequestId | None:
        """The caller's id for the answer to ``wire_id``, once (then forgotten)."""
        with self._lock:
            return self._callers.pop(wire_id, None)

    def opened(self, endpoint: str, deliver: Deliver) -> None:
        """The event stream that announced ``endpoint`` takes events through ``deliver``."""
        with self._lock:
            self.streams[endpoint] = deliver

    def closed(self, endpoint: str, deliver: Deliver) -> None:
        """That event stream ended (a newer one for the same endpoint stays)."""
        with self._lock:
            if self.streams.get(endpoint) == deliver:  # a bound method: equal, not the same
                del self.streams[endpoint]

    def stream(self, endpoint: str) -> Deliver | None:
        """What delivers events to the stream whose POSTs go to ``endpoint``, if one is open."""
        with self._lock:
            return self.streams.get(endpoint)
