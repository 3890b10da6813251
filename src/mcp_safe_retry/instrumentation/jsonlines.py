"""A hook that appends one JSON line per finished call: a diagnostic log to keep or ship."""

from __future__ import annotations

import json
import logging
import os
import threading
from typing import IO

from ..core.records import Attempt, CallRecord
from .redact import Redactor, record_dict

__all__ = ["JsonLinesSink"]

logger = logging.getLogger("mcp_safe_retry")


class JsonLinesSink:
    """Write each finished call's diagnostic record as one JSON line, flushed at once.

    The line is ``CallRecord.to_dict()`` with free-text details scrubbed: it holds no
    header, no URL, no tool argument (not even their digest), no session id and no server
    error text. Safe to share across threads and transports.

    Args:
        file: a path (opened for appending, UTF-8, and closed by ``close()``) or an open
            text file (left open by ``close()``, which only flushes it).
        redact: called with each line's dict and its CallRecord before writing; returns the
            dict to write (to hide more, or to opt in to more from the record, e.g.
            ``record.session_id``) or None to skip the call. If it raises, nothing is
            written.
    """

    def __init__(
        self, file: str | os.PathLike[str] | IO[str], *, redact: Redactor | None = None
    ) -> None:
        if isinstance(file, str | os.PathLike):
            self._file: IO[str] = open(file, "a", encoding="utf-8")  # noqa: SIM115
            self._owned = True
        else:
            self._file = file
            self._owned = False
        self._redact = redact
        self._lock = threading.Lock()
        self._closed = False

    def __repr__(self) -> str:
        name = getattr(self._file, "name", None)
        return f"JsonLinesSink({name!r})" if isinstance(name, str) else "JsonLinesSink()"

    def on_attempt(self, record: CallRecord, attempt: Attempt) -> None:
        """Nothing: one line per call, written when it completes."""

    def on_call(self, record: CallRecord) -> None:
        data = record_dict(record)
        if self._redact is not None:
            redacted = self._redact(data, record)
            if redacted is None:
                return
            data = redacted
        line = json.dumps(data, separators=(",", ":"), default=str) + "\n"
        with self._lock:
            if self._closed:
                logger.debug("JsonLinesSink is closed: a record was not written")
                return
            self._file.write(line)
            self._file.flush()

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Stop writing; close the file if the sink opened it. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._owned:
                self._file.close()
            else:
                self._file.flush()

    def __enter__(self) -> JsonLinesSink:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
