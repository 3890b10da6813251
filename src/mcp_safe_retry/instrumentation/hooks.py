"""Observers of attempts and calls, and the guard that keeps a failing one from hurting."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ..core.records import Attempt, CallRecord

__all__ = ["Hook", "notify_attempt", "notify_call"]

logger = logging.getLogger("mcp_safe_retry")
logger.addHandler(logging.NullHandler())


@runtime_checkable
class Hook(Protocol):
    """Told about every attempt as it ends and every call as it completes.

    Both methods are called on the thread or task that drives the call and must not block.
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
