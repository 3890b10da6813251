"""Observers of attempts and calls, and the guard that keeps a failing one from hurting."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ..core.records import Attempt, CallRecord

__all__ = ["NAME", "Hook", "logger", "notify_attempt", "notify_call"]

NAME = "mcp_safe_retry"
"""The name the package's logger, tracer and meter go by."""

logger = logging.getLogger(NAME)
logger.addHandler(logging.NullHandler())


@runtime_checkable
class Hook(Protocol):
    """Told about every attempt as it ends and every call as it completes.

    Both are called by the transport on the thread or task that drives the call, once the
    call's events are handled (before a backoff, and when the answer is handed on or the
    call ends), never while the call decides. They must not block: a hook with slow work (a
    file, an exporter) hands it to a thread of its own, as ``JsonLinesSink`` does.
    Exceptions they raise are logged and swallowed: a hook never breaks a call.
    """

    def on_attempt(self, record: CallRecord, attempt: Attempt) -> None: ...

    def on_call(self, record: CallRecord) -> None: ...


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
