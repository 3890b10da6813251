"""Observers of attempts and calls, and the guard that keeps a failing one from hurting."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..core.hooks import Hook, Notice
from ..core.records import Attempt, CallRecord

__all__ = ["NAME", "Hook", "logger", "notify_attempt", "notify_call", "publish"]

NAME = "mcp_safe_retry"
"""The name the package's logger, tracer and meter go by."""

logger = logging.getLogger(NAME)
logger.addHandler(logging.NullHandler())


def notify_attempt(hooks: Sequence[Hook], record: CallRecord, attempt: Attempt) -> None:
    for hook in hooks:
        try:
            hook.on_attempt(record, attempt)
        except Exception:
            logger.exception("mcp_safe_retry hook %r failed in on_attempt", hook)


def notify_call(hooks: Sequence[Hook], record: CallRecord) -> None:
    for hook in hooks:
        try:
            hook.on_call(record)
        except Exception:
            logger.exception("mcp_safe_retry hook %r failed in on_call", hook)


def publish(owed: Sequence[Notice]) -> None:
    """Tell the hooks what a call owes them (``Ledger.owed``), in order."""
    for listeners, snapshot, attempt in owed:
        record = snapshot.get()
        if attempt:
            notify_attempt(listeners, record, record.attempts[-1])
        else:
            notify_call(listeners, record)
