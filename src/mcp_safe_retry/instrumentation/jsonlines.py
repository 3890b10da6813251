"""A hook that appends one JSON line per finished call: a diagnostic log to keep or ship."""

from __future__ import annotations

import functools
import json
import os
import queue
import threading
import weakref
from typing import IO, Any

from ..core.live import Live
from ..core.records import Attempt, CallRecord
from .hooks import logger
from .redact import Redactor, record_dict

__all__ = ["JsonLinesSink"]

_STOP = object()  # tells the writer thread to finish


class JsonLinesSink(Live):
    """Write each finished call's diagnostic record as one JSON line, from a thread of its own.

    The line is ``CallRecord.to_dict()`` with free-text details scrubbed: it holds no
    header, no URL, no tool argument (not even their digest), no session id and no server
    error text. Safe to share across threads and transports.

    ``on_call`` only builds the line's dict and queues it: the file is written and flushed
    by a background thread, so no write ever runs on the caller's thread or event loop. When
    ``max_queued`` lines wait already (a disk slower than the calls), a line is dropped,
    counted in ``dropped`` and logged (the first drop as a warning, then every 1000th).
    ``flush()`` waits until what is queued is written; ``close()`` (or leaving the ``with``
    block, or the interpreter's exit) writes what is queued, then stops.

    Shared, never copied: ``copy.deepcopy`` returns this sink. A sink on a path pickles by
    its path: loaded in another process, it appends to the same file from there (a line
    longer than the file's buffer may then interleave with the other process's lines). A
    sink on a file it was given cannot be pickled (``TypeError``): the file cannot follow it.

    Args:
        file: a path (opened for appending, UTF-8, and closed by ``close()``) or an open
            text file (left open by ``close()``, which only flushes it).
        redact: called with each line's dict and its CallRecord before it is queued;
            returns the dict to write (to hide more, or to opt in to more from the record,
            e.g. ``record.session_id``) or None to skip the call. If it raises, nothing is
            written.
        max_queued: how many lines may wait for the writer thread.

    Attributes:
        file: the text file the lines go to.
    """

    def __init__(
        self,
        file: str | os.PathLike[str] | IO[str],
        *,
        redact: Redactor | None = None,
        max_queued: int = 10_000,
    ) -> None:
        if max_queued < 1:
            raise ValueError(f"max_queued must be at least 1, not {max_queued!r}")
        if isinstance(file, str | os.PathLike):
            self.file: IO[str] = open(file, "a", encoding="utf-8")  # noqa: SIM115
            self._path: str | None = os.path.abspath(file)  # where a pickle reopens it
        else:
            self.file = file
            self._path = None
        self._owned = self._path is not None
        self._redact = redact
        self._queue: queue.Queue[object] = queue.Queue(max_queued)
        self._lock = threading.Lock()
        self._writer: threading.Thread | None = None  # started with the first line
        self._finalizer: weakref.finalize[Any, JsonLinesSink] | None = None
        self._closed = False
        self._dropped = 0

    def __repr__(self) -> str:
        name = getattr(self.file, "name", None)
        return f"JsonLinesSink({name!r})" if isinstance(name, str) else "JsonLinesSink()"

    def _recipe(self) -> functools.partial[JsonLinesSink]:
        if self._path is None:
            raise TypeError(
                f"cannot pickle {self!r}: it writes to a file it was given, which cannot "
                "follow it to another process; give JsonLinesSink a path instead"
            )
        return functools.partial(
            JsonLinesSink, self._path, redact=self._redact, max_queued=self._queue.maxsize
        )

    def on_attempt(self, record: CallRecord, attempt: Attempt) -> None:
        """Nothing: one line per call, written when it completes."""

    def on_call(self, record: CallRecord) -> None:
        data = record_dict(record)
        if self._redact is not None:
            redacted = self._redact(data, record)
            if redacted is None:
                return
            data = redacted
        with self._lock:
            if self._closed:
                logger.debug("JsonLinesSink is closed: a record was not written")
                return
            if self._writer is None:
                self._start()
            try:
                self._queue.put_nowait(data)
            except queue.Full:
                self._dropped += 1
                dropped = self._dropped
            else:
                return
        if dropped == 1 or dropped % 1000 == 0:
            logger.warning(
                "JsonLinesSink: %d line(s) waiting, the writer cannot keep up; "
                "%d record(s) dropped so far",
                self._queue.maxsize,
                dropped,
            )

    @property
    def dropped(self) -> int:
        """How many records were not written because the queue was full."""
        return self._dropped

    @property
    def closed(self) -> bool:
        return self._closed

    def flush(self) -> None:
        """Wait until every queued line is written and flushed."""
        self._queue.join()

    def close(self) -> None:
        """Write what is queued, stop the writer, and close the file if the sink opened it.
        Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._finalizer is not None:
            self._finalizer()  # writes what is queued, stops the writer, then the file
        else:
            _finish_file(self.file, self._owned)

    def __enter__(self) -> JsonLinesSink:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _start(self) -> None:
        self._writer = threading.Thread(
            target=_write_lines, args=(self._queue, self.file), name=repr(self), daemon=True
        )
        self._writer.start()
        # Also when the sink is dropped unclosed, or at the interpreter's exit (a daemon
        # thread dies with it): what is queued is written, then the writer stops.
        self._finalizer = weakref.finalize(
            self, _stop_writer, self._queue, self._writer, self.file, self._owned
        )


def _write_lines(lines: queue.Queue[object], file: IO[str]) -> None:
    """The writer thread: one line per queued dict, flushed whenever the queue runs dry."""
    while True:
        item: Any = lines.get()
        try:
            if item is _STOP:
                return
            file.write(json.dumps(item, separators=(",", ":"), default=str) + "\n")
            if lines.empty():
                file.flush()
        except Exception:
            logger.exception("JsonLinesSink could not write a record")
        finally:
            lines.task_done()


def _stop_writer(
    lines: queue.Queue[object], writer: threading.Thread, file: IO[str], owned: bool
) -> None:
    lines.put(_STOP)
    writer.join()
    _finish_file(file, owned)


def _finish_file(file: IO[str], owned: bool) -> None:
    if owned:
        file.close()
    else:
        file.flush()
