"""Plain-text tables of call records, for the CLI and for people reading a terminal."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..core.records import CallRecord, target

__all__ = ["format_table", "record_row"]

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


def format_table(rows: Iterable[Sequence[str]], headers: Sequence[str] = HEADERS) -> str:
    """Columns padded to their widest cell, a rule under the headers."""
    table = [tuple(headers), *(tuple(r) for r in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(headers))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)
