"""Plain SSE events read without the line-by-line decoder (``sse.SSEDecoder.decode``).

A plain event is one ``data: `` line, perhaps after ``event: message``, then a blank line:
what servers send for every JSON-RPC message. Such events need no field but their data, so
a chunk that is exactly one (``lone_event``), or holds many in a row (``plain_run``), is
read with a few searches in C rather than line by line in Python.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["CR", "Run", "first_end", "lone_event", "plain_run"]


class Run(NamedTuple):
    """Plain events read together (``SSEDecoder.decode``): each is one ``data: `` line,
    after ``event: message`` or not, then a blank line, and no other field (so its type is
    ``message`` and its id None); in a run all have the same ``head`` (what comes before
    the data) and ``tail`` (what comes after: two LFs, or two CRLFs, as the head's line).
    ``raw`` is all their bytes, in order: event i is ``head + datas[i] + tail``.
    """

    datas: list[bytes]
    raw: bytes
    head: bytes
    tail: bytes

    def size(self, start: int, stop: int) -> int:
        """The length of the raw bytes of events ``start`` to ``stop`` (excluded)."""
        datas = self.datas
        count = stop - start
        if count == len(datas):
            return len(self.raw)
        return count * (len(self.head) + len(self.tail)) + sum(map(len, datas[start:stop]))


CR = 13
_LF_HEAD = b"event: message\ndata: "
_CRLF_HEAD = b"event: message\r\ndata: "


def first_end(chunk: bytes, lf: int, after_cr: bool) -> int:
    """Where the first event that ends in ``chunk`` ends, by two line ends in a row (LF LF,
    or CRLF CRLF when the first line end is a CRLF); -1 if none is found so. ``lf``: the
    first LF in ``chunk``; ``after_cr``: the bytes before ``chunk`` end in a CR."""
    if chunk[lf - 1] == CR if lf else after_cr:
        end = chunk.find(b"\r\n\r\n", lf - 1 if lf else 0)
        return end + 4 if end >= 0 else -1
    end = chunk.find(b"\n\n", lf)
    return end + 2 if end >= 0 else -1


def plain_run(chunk: bytes, pos: int) -> Run | None:
    """The plain events (see ``Run``) from ``pos`` on, up to the first that is not, or the
    last that ends in ``chunk``; None if the event at ``pos`` is not one.

    The chunk is split at each line end, blank line and head between two events (one C
    pass): the pieces are the events' data if none holds a CR or LF (one more), else the
    run stops before the first that does.
    """
    if chunk.startswith(b"data: ", pos):
        head = b"data: "
    elif chunk.startswith(_LF_HEAD, pos):
        head = _LF_HEAD
    elif chunk.startswith(_CRLF_HEAD, pos):
        head = _CRLF_HEAD
    else:
        return None
    start = pos + len(head)
    lf = chunk.find(b"\n", start)
    if lf < 0:
        return None
    crlf = chunk[lf - 1] == CR
    if crlf != (head == _CRLF_HEAD) and head != b"data: ":
        return None  # a head's line end unlike its data's
    end = lf - 1 if crlf else lf  # where the first event's data ends
    tail = b"\r\n\r\n" if crlf else b"\n\n"
    if not chunk.startswith(tail, end) or chunk.find(b"\r", start, end) >= 0:
        return None
    last = chunk.rfind(tail) + len(tail)  # the last event that may be one ends there
    raw = chunk[pos:last]  # the chunk itself if it is all events
    datas = raw.split(tail + head)
    datas[0] = datas[0][len(head) :]
    datas[-1] = datas[-1][: -len(tail)]
    joined = b"".join(datas)
    if joined.find(b"\n") < 0 and joined.find(b"\r") < 0:
        return Run(datas, raw, head, tail)
    # The first piece with a line end holds a plain event and what follows it (not of
    # the same head), or the first event that is not plain: from there on the events
    # are read line by line.
    index = next(i for i, data in enumerate(datas) if b"\n" in data or b"\r" in data)
    data = datas[index]
    del datas[index:]
    stop = data.find(tail)
    if stop >= 0 and data.find(b"\n", 0, stop) < 0 and data.find(b"\r", 0, stop) < 0:
        datas.append(data[:stop])
    size = len(datas) * (len(head) + len(tail)) + sum(map(len, datas))
    return Run(datas, chunk[pos : pos + size], head, tail)


_LONE_HEAD = re.compile(rb"(?:event: message\r?\n)?data: ").match


def lone_event(chunk: bytes) -> bytes | None:
    """The data of ``chunk`` if it is exactly one event of one ``data: `` line (perhaps
    after ``event: message``), its data and blank lines ending both in LF (and no CR
    anywhere) or both in CRLF; else None (and the decoder reads it line by line)."""
    head = _LONE_HEAD(chunk)
    if head is None:
        return None
    # The data is cut out first (it is what comes back) and then searched: no line end in it.
    if chunk.endswith(b"\r\n\r\n"):  # as the official servers send
        data = chunk[head.end() : -4]
        if b"\n" in data or b"\r" in data:
            return None
    elif chunk.endswith(b"\n\n"):
        data = chunk[head.end() : -2]
        if b"\n" in data or b"\r" in chunk:
            return None
    else:
        return None
    return data
