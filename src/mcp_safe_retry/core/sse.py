"""Incremental Server-Sent Events decoding that never buffers more than one event.

The decoder follows the WHATWG event-stream rules (lines end in CRLF, LF or CR; a blank
line dispatches; ``data`` lines join with LF; an unterminated event at end of stream is
discarded). Besides each event it returns the raw bytes that made it up, so a caller can
forward a stream event by event and replace a single event without re-encoding the rest.
Plain events (one ``data:`` line each, as servers send them) are read a chunk at a time in
C rather than line by line; ``decode`` hands them out together as a ``Run`` (see
``sse_plain.py``), ``feed`` as the same events as ever.

A large event's data is not copied out of the buffer it was read into: the buffer itself,
trimmed to the data, becomes ``Event.data`` (a ``bytearray``), and the decoder goes on in a
fresh one; its raw bytes are the chunks it came in. So a 1 MB answer is copied once, into
the buffer (see ``Event``).
"""

from __future__ import annotations

from typing import NamedTuple

from .sse_plain import CR, Run, first_end, lone_event, plain_run

__all__ = ["DEFAULT_MAX_EVENT_BYTES", "VIEW_BYTES", "Event", "Run", "SSEDecoder", "encode_event"]

DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024
VIEW_BYTES = 16 * 1024
"""A data line longer than this that ends its event, and the bytes read so far, is handed
on in the decoder's buffer rather than copied out of it (see ``Event.data``)."""


class Event(NamedTuple):
    """One dispatched SSE event and the exact bytes it was read from (a tuple: one is made
    per event of every stream).

    ``data`` is bytes-like: ``bytes``, or for a large event the decoder's own buffer (a
    ``bytearray`` no longer in the decoder's use, so no second copy of it is made). Read it,
    don't keep it beyond the event's handling (``bytes(data)`` if you must). ``raw`` is
    ``bytes``, or for such an event the chunks it came in (a tuple, in order), when it began
    a chunk: handed on as they are, they are never joined.
    """

    data: bytes | bytearray
    event: str
    id: str | None
    raw: bytes | tuple[bytes, ...]


class SSEDecoder:
    """Feed bytes in, get complete events out.

    Memory is bounded by ``max_event_bytes``: an event (or a line) that grows past it sets
    ``oversized``, after which the decoder stops parsing and hands every byte back raw.
    """

    # The immutable starting values are the class's (one decoder is made per stream, so
    # they are not set again on each); each is set on the decoder once it changes.
    _event_start = 0  # where the current event's raw bytes begin in _buf
    _scan = 0  # where the next line begins in _buf
    # _buf[_scan:_seek] holds no line end: a long line arriving in many chunks is
    # searched once, not again with every chunk.
    _seek = 0
    _chunks: list[bytes] | None = None  # see feed() and _taken()
    _type = ""
    _id: str | None = None
    last_event_id: str | None = None
    retry_ms: int | None = None
    oversized = False
    _eof = False

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self._max = max_event_bytes
        self._buf = bytearray()
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[Event]:
        """Decode ``chunk`` into the blocks it completes, in stream order.

        A block without data (a comment, a keep-alive, a lone ``id:``) comes back as an
        Event with empty ``data`` and ``event``, so every byte is accounted for in order.
        Once oversized, each chunk comes back as one such raw block.
        """
        events: list[Event] = []
        for block in self.decode(chunk):
            if isinstance(block, Run):
                head, tail = block.head, block.tail
                events += [Event(data, "message", None, head + data + tail) for data in block.datas]
            else:
                events.append(block)
        return events

    def decode(self, chunk: bytes) -> list[Event | Run]:
        """``feed``, with the plain events of a chunk read together as one ``Run``.

        When nothing is pending, a chunk that is exactly one plain event, as most answers
        arrive, is read without being copied into the buffer, and is its own raw bytes.
        Else a chunk with no line end only lengthens the pending event; or that event is
        read up to its end as usual, and
        the plain events that follow it (see ``Run``) are read in a few passes over the
        chunk in C, not line by line; whatever follows the first other event is read as
        usual. Events larger than the limit never get there: only a chunk within it does.
        """
        buf = self._buf
        if buf:  # an event is pending, so the decoder is not oversized
            try:
                lf = chunk.find(b"\n")  # memchr: a chunk inside a long line costs next to nothing
            except AttributeError:  # not bytes-like (a memoryview): read as usual
                return self._feed(chunk)
            if lf < 0:  # every chunk inside a long event (an empty one too), whatever its size
                if chunk.find(b"\r") < 0 and buf[-1] != CR and len(buf) + len(chunk) <= self._max:
                    # No line end in it, and none waits (a CR ending the buffer): the chunk
                    # only lengthens the line, as _feed would find after searching the
                    # buffer again (see _seek), in a frame of its own.
                    if self._chunks is not None:
                        self._chunks.append(chunk)
                    buf += chunk
                    self._seek = len(buf)
                    return []
                return self._feed(chunk, -1)
            if type(chunk) is not bytes or len(chunk) > self._max:
                return self._feed(chunk)
            pos = first_end(chunk, lf, buf[-1] == CR)
            if pos < 0 or len(buf) + pos > self._max:
                return self._feed(chunk)
            # Two line ends in a row end an event whatever came before, so this leaves
            # the buffer empty (else, which is not expected, the rest is read as usual).
            blocks = self._feed(chunk[:pos])
            if self._buf:
                return blocks + self._feed(chunk[pos:])
            if pos == len(chunk):
                return blocks
        else:
            if self.oversized or type(chunk) is not bytes or len(chunk) > self._max:
                return self._feed(chunk)
            # Nothing pending, so no field of a half-read event is set either.
            data = lone_event(chunk)
            if data is not None:
                return [Event(data, "message", None, chunk)]
            pos = 0
            blocks = []
        run = plain_run(chunk, pos)
        if run is not None:
            blocks.append(run)
            pos += len(run.raw)
        if pos < len(chunk):
            blocks += self._feed(chunk[pos:] if pos else chunk)
        return blocks

    def _feed(self, chunk: bytes, lf: int | None = None, /) -> list[Event | Run]:
        """``feed`` read line by line (the lines of a chunk that ``decode`` does not read
        together); ``lf`` -1: ``chunk`` is known to hold no LF."""
        buf = self._buf
        if not buf:  # the chunks the buffer is made of, while it is exactly them
            if self.oversized:  # which the buffer is empty for
                return [Event(b"", "", None, bytes(chunk))] if chunk else []
            self._chunks = [chunk] if type(chunk) is bytes else None
        elif self._chunks is not None:
            self._chunks.append(chunk)
        buf += chunk
        seek = self._seek
        # No LF from _seek to the end of what the buffer held (see _lines): only the chunk
        # is searched, if it is not known to hold none.
        if lf is None:
            lf = buf.find(b"\n", seek)
        cr = buf.find(b"\r", seek)
        end = len(buf)
        events: list[Event | Run] = []
        if lf < 0 and (cr < 0 or (cr == end - 1 and not self._eof)):
            # No line ends here: the usual case for a chunk inside a long line. A CR at
            # the end of the buffer may be the first half of a CRLF, so it waits.
            self._seek = end if cr < 0 else cr
        elif self._lines(buf, events, lf, cr):
            buf = self._buf  # a new one if the last event took the old one as its data
            start = self._event_start
            if start:  # the bytes of dispatched events go
                del buf[:start]
                self._scan -= start
                self._seek -= start
                self._event_start = 0
                self._chunks = None  # the buffer now begins inside a chunk
            end = len(buf)
        else:
            return events  # an event past the limit ended parsing
        if end > self._max:
            self.oversized = True
            events.append(Event(b"", "", None, bytes(buf)))
            buf.clear()
            self._scan = self._seek = 0
        return events

    def _lines(self, buf: bytearray, events: list[Event | Run], lf: int, cr: int) -> bool:
        """Read the lines that end in ``buf`` past ``_scan``, whatever ends them (CRLF, LF
        or CR), appending the events they complete; False if one was past the limit.

        ``lf`` and ``cr`` are the first LF and CR at or past ``_scan`` (-1: none). Each is
        looked for again only once the reading passed it, so every byte is searched once
        for each, and the usual lines (``data: ...``, ``event: message``) are read inline.
        """
        pos = self._scan
        start = self._event_start
        end = len(buf)
        eof = self._eof
        find = buf.find
        startswith = buf.startswith
        field = self._field
        data = self._data
        limit = self._max
        too_big: bytes | None = None
        # A long first data line is copied only when the event goes on past it or does not
        # end the buffer; else the buffer becomes the event's data (``_taken``).
        span: tuple[int, int] | None = None
        taken = -1  # where the event that takes the buffer begins
        with memoryview(buf) as view:  # slices copy once; released before buf is resized
            while True:
                if cr < 0 or 0 <= lf < cr:  # the line ends in LF, or nowhere yet
                    if lf < 0:
                        break
                    eol = lf
                    nxt = lf + 1
                    lf = find(b"\n", nxt)
                else:  # in CR or CRLF
                    eol = cr
                    nxt = cr + 1
                    if nxt == end and not eof:
                        break  # a CR at the end of the buffer may be the first half of CRLF
                    if lf == nxt:
                        nxt += 1
                        lf = find(b"\n", nxt)
                    cr = find(b"\r", nxt)
                if eol != pos:
                    if span is not None:  # the long line is not the event's last
                        data[0] = bytes(view[span[0] : span[1]])
                        span = None
                    if startswith(b"data: ", pos):  # the usual lines, as _field reads them
                        if eol - pos > VIEW_BYTES and not data:
                            span = (pos + 6, eol)
                            data.append(b"")  # its place, filled if it must be copied
                        else:
                            data.append(bytes(view[pos + 6 : eol]))
                    elif eol - pos == 14 and startswith(b"event: message", pos):
                        self._type = "message"
                    else:
                        field(bytes(view[pos:eol]))
                    pos = nxt
                    continue
                if span is not None and nxt == end and nxt - start <= limit:
                    taken = start  # the event is all the buffer holds from start on
                    pos = start = nxt
                    break
                raw = bytes(view[start:nxt])
                pos = start = nxt
                if len(raw) > limit:
                    too_big = raw
                    break
                if span is not None:
                    data[0] = bytes(view[span[0] : span[1]])
                    span = None
                events.append(self._dispatch(raw))
                data = self._data  # a new list after each dispatch
            if span is not None and taken < 0:  # the event goes on in the next chunk
                data[0] = bytes(view[span[0] : span[1]])
        if too_big is not None:
            self._oversize(buf, events, too_big, pos)
            return False
        if taken >= 0 and span is not None:
            events.append(self._taken(buf, taken, span))
            self._scan = self._seek = self._event_start = 0
            return True
        self._scan = pos
        self._seek = end if cr < 0 else cr
        self._event_start = start
        return True

    def _oversize(self, buf: bytearray, events: list[Event | Run], raw: bytes, rest: int) -> None:
        """An event past the limit: it and the rest of the buffer go back raw; stop parsing."""
        self.oversized = True
        events.append(Event(b"", "", None, raw + bytes(buf[rest:])))
        buf.clear()
        self._event_start = self._scan = self._seek = 0
        self._reset()

    def end(self) -> bool:
        """End of stream: the next ``decode`` (of ``b""``) settles a trailing CR, as
        ``finish`` does. Returns whether an event is pending (else nothing waits for its
        LF, so there is nothing to settle)."""
        self._eof = True
        return bool(self._buf)

    def finish(self) -> list[Event]:
        """End of stream: settle a trailing CR; an unterminated event stays pending."""
        return self.feed(b"") if self.end() else []

    def pending(self) -> bytes:
        """The bytes of an event still being read (discarded by SSE rules at end of stream)."""
        return bytes(self._buf)

    def _field(self, line: bytes) -> None:
        name, sep, value = line.partition(b":")
        if not name:
            return  # a comment line
        if sep and value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._type = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\x00" not in value:
                self._id = value.decode("utf-8", "replace")
                self.last_event_id = self._id
        elif name == b"retry" and value.isdigit():
            self.retry_ms = int(value)

    def _taken(self, buf: bytearray, start: int, span: tuple[int, int]) -> Event:
        """The event that is all of ``buf`` from ``start`` on, its data the buffer itself
        trimmed to ``span`` (in place: no copy); the decoder reads on in a fresh buffer.
        Its raw bytes are the chunks it came in, as they came, when the buffer is exactly
        those (no copy either); else a copy."""
        chunks = self._chunks
        raw: bytes | tuple[bytes, ...]
        if start == 0 and chunks is not None:
            raw = tuple(chunks)
        else:
            with memoryview(buf) as view:
                raw = bytes(view[start:])
        self._chunks = None
        self._buf = bytearray()
        del buf[span[1] :]
        del buf[: span[0]]
        event = Event(buf, self._type or "message", self._id, raw)
        self._reset()
        return event

    def _dispatch(self, raw: bytes) -> Event:
        if self._data:
            event = Event(b"\n".join(self._data), self._type or "message", self._id, raw)
        else:
            event = Event(b"", "", self._id, raw)
        self._reset()
        return event

    def _reset(self) -> None:
        self._data = []
        self._type = ""
        self._id = None


def encode_event(data: bytes, *, event: str = "message", event_id: str | None = None) -> bytes:
    """Encode one SSE event (``data`` must not contain line breaks; JSON from dumps never does)."""
    head = f"event: {event}\n".encode()
    if event_id is not None:
        head += f"id: {event_id}\n".encode()
    return head + b"data: " + data + b"\n\n"
