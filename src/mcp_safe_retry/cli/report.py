"""Plain-text tables of call records, for the CLI and for people reading a terminal."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TextIO

from ..core.records import CallRecord, target

__all__ = ["Paint", "format_table", "record_row"]

_SUCCESSES = ("TOOL_SUCCESS", "RPC_SUCCESS", "ACCEPTED", "REDIRECT")


class Paint:
    """Colour for a terminal that shows it: on when the output is a terminal, ``NO_COLOR``
    is unset (no-color.org) and ``TERM`` is not ``dumb``."""

    def __init__(self, on: bool) -> None:
        self.on = on

    @classmethod
    def for_stream(cls, stream: TextIO) -> Paint:
        wanted = not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
        return cls(wanted and stream.isatty())

    def outcome(self, text: str, *, ok: bool | None = None) -> str:
        """``text`` in green (a success) or red (anything else); ``ok`` None: read ``text``."""
        if not self.on or not text.strip():
            return text
        good = text.strip().startswith(_SUCCESSES) if ok is None else ok
        return f"\033[{32 if good else 31}m{text}\033[0m"

    def bold(self, text: str) -> str:
        return f"\033[1m{text}\033[0m" if self.on else text


HEADERS = ("method / tool", "idempotency", "POSTs", "HTTP", "outcome", "origins", "decision")


def record_row(record: CallRecord) -> tuple[str, ...]:
    """One row: what was called, how safe it was, what went over the wire, how it ended."""
    final = record.attempts[-1].decision if record.attempts else None
    outcome = record.outcome or "(open)"
    if record.classification is not None and record.classification.code is not None:
        outcome += f" {record.classification.code}"
    return (
        target(record),
        str(record.idempotency),
        str(record.post_count),
        ",".join(str(a.status) if a.status else "-" for a in record.attempts) or "-",
        outcome,
        ",".join(str(a.retry_origin) for a in record.attempts),
        str(final.reason) if final else "-",
    )


def format_table(
    rows: Iterable[Sequence[str]],
    headers: Sequence[str] = HEADERS,
    *,
    paint: Paint | None = None,
    outcome_column: int = 4,
) -> str:
    """Columns padded to their widest cell, a rule under the headers; with ``paint``, the
    headers bold and each row's outcome in its colour."""
    paint = paint or Paint(False)
    table = [tuple(headers), *(tuple(r) for r in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(headers))]

    def line(row: Sequence[str], number: int) -> str:
        cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=True)]
        if number == 0:
            cells = [paint.bold(c) for c in cells]
        elif outcome_column < len(cells):
            cells[outcome_column] = paint.outcome(cells[outcome_column])
        return "  ".join(cells).rstrip()

    lines = [line(row, n) for n, row in enumerate(table)]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
