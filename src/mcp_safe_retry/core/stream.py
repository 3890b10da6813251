"""Following one SSE answer as it flows: pure, event by event, bounded memory."""

from __future__ import annotations

from .classify import OVERSIZED, classify_event, classify_events
from .jsonrpc import JSON, RequestId, answers_under, with_id
from .outcomes import Classification, Outcome, verdict
from .results import Declared
from .sse import VIEW_BYTES, Event, Run, SSEDecoder, encode_event

__all__ = ["StreamTracker"]


class StreamTracker:
    """Pass an SSE body on while finding the response to one request in it.

    Only whole events are handed on (an event cut off by a broken stream is held back, as
    an SSE reader would drop it anyway), and the response event is rewritten to carry the
    caller's id when the request went out under another one.
    """

    # Starting values, the class's (set on the tracker once they change).
    classification: Classification | None = None
    message: JSON = None
    events = 0
    duplicates = 0

    def __init__(
        self,
        *,
        wire_id: RequestId,
        caller_id: RequestId,
        method: str,
        max_event_bytes: int,
        want_message: bool = True,
        tasks: Declared = False,
    ) -> None:
        """``want_message=False``: a plain success may be recognised without building its
        message (``message`` then stays None); the caller neither learns from it nor
        restores an id in it. ``tasks``: the request declared the Tasks extension."""
        self._wire_id = wire_id
        self._caller_id = caller_id
        self._method = method
        self._want_message = want_message
        self._tasks = tasks
        self._decoder = SSEDecoder(max_event_bytes)

    def keep_message(self) -> None:
        """Build the response's message after all (its call's caller gave up on it: a
        re-send joins that answer, core/guard.py)."""
        self._want_message = True

    @property
    def done(self) -> bool:
        """True once the response (or a reason to give up looking) was found."""
        return self.classification is not None

    @property
    def last_event_id(self) -> str | None:
        return self._decoder.last_event_id

    def feed(self, chunk: bytes) -> bytes:
        """Take a chunk of the stream; return the bytes to hand on now."""
        return b"".join(self.pieces(chunk))

    def finish(self) -> bytes:
        """The stream ended: return what is left to hand on."""
        return b"".join(self.finish_pieces())

    def finish_pieces(self) -> list[bytes]:
        """``finish`` as pieces (see ``pieces``)."""
        return self.pieces(b"") if self._decoder.end() else []

    def pieces(self, chunk: bytes) -> list[bytes]:
        """``feed`` as the pieces to hand on, in order: a large event goes on in the chunks
        it came in, not copied into one; small pieces next to each other go on joined.

        One frame for every chunk of the stream: the decoder's blocks are followed here.
        """
        decoder = self._decoder
        blocks = decoder.decode(chunk)
        if not blocks:  # nor did the decoder turn oversized: that comes with an event
            return []
        out: list[bytes] = []
        for block in blocks:
            if isinstance(block, Run):
                self._forward_run(block, out)
                continue
            data = block.data
            if data:
                self.events += 1
                found = classify_event(
                    data,
                    block.event,
                    self._wire_id,
                    self._method,
                    want_message=self._want_message,
                    tasks=self._tasks,
                )
                if found is not None:
                    self._found(block, found, out)
                    continue
            _add(out, block.raw)
        if decoder.oversized and self.classification is None:
            self.classification = verdict(Outcome.MALFORMED_JSON, detail=OVERSIZED)
        return _together(out) if len(out) > 1 else out

    def _forward_run(self, run: Run, out: list[bytes]) -> None:
        """A run of plain events: handed on as one piece, unless some are found to be
        answers or malformed (then the pieces between them, and each as ``_found`` says)."""
        datas = run.datas
        self.events += len(datas) - datas.count(b"")
        found = classify_events(
            datas, self._wire_id, self._method, want_message=self._want_message, tasks=self._tasks
        )
        raw = run.raw
        if not found:
            out.append(raw)
            return
        start = offset = 0
        for index, answer in found:
            at = offset + run.size(start, index)
            end = at + run.size(index, index + 1)
            if at > offset:
                out.append(raw[offset:at])
            self._found(Event(datas[index], "message", None, raw[at:end]), answer, out)
            start, offset = index + 1, end
        if offset < len(raw):
            out.append(raw[offset:])

    def _found(self, event: Event, found: tuple[Classification, JSON], out: list[bytes]) -> None:
        """An event ``classify_event`` found something in: the answer (the first one
        found), handed on with the caller's id, or a malformed event, handed on as it is,
        or a second answer, dropped."""
        if self.classification is None:
            self.classification, self.message = found
            # No message read (a plain success): no id to restore in it.
            raw = event.raw if found[1] is None else self._restore_id(event)
            if isinstance(raw, tuple):
                out.extend(raw)
            else:
                out.append(raw)
        elif found[0].outcome is Outcome.MALFORMED_JSON:
            _add(out, event.raw)
        else:
            self.duplicates += 1  # a second answer to the request: handed on once only

    def held_back(self) -> bytes:
        """The bytes of an unterminated event, which SSE readers discard at end of stream."""
        return self._decoder.pending()

    def _restore_id(self, event: Event) -> bytes | tuple[bytes, ...]:
        message = self.message
        if not isinstance(message, dict) or not answers_under(
            message, self._wire_id, self._caller_id
        ):
            return event.raw
        return encode_event(with_id(message, self._caller_id), event=event.event, event_id=event.id)


def _add(out: list[bytes], raw: bytes | tuple[bytes, ...]) -> None:
    if isinstance(raw, tuple):
        out.extend(raw)
    else:
        out.append(raw)


def _together(pieces: list[bytes]) -> list[bytes]:
    """``pieces`` with the small ones next to each other joined into one (each piece handed
    on costs a pass through every layer of the client above), the large ones as they are."""
    together: list[bytes] = []
    small: list[bytes] = []
    for piece in pieces:
        if len(piece) < VIEW_BYTES:
            small.append(piece)
            continue
        if small:
            together.append(b"".join(small))
            small = []
        together.append(piece)
    if small:
        together.append(b"".join(small))
    return together
