"""The observer protocol: what a hook is told, as the records it receives (``records``).

The core only keeps, per call, which hooks are owed which snapshot (``ledger``: a ``Notice``
each); telling them (the I/O, and guarding against a hook that fails) is the shells'
(``instrumentation.hooks``).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .records import Attempt, CallRecord, LazyRecord, Seen

__all__ = ["Hook", "Notice", "SwitchedHook"]


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


class SwitchedHook(Hook, Protocol):
    """A hook that may be switched off (the logging hook, while its logger is), or have
    nothing to say about an attempt: then no record is built for it."""

    def enabled(self) -> bool: ...

    def wants(self, attempt: Seen) -> bool:
        """Whether it would say anything about ``attempt`` (asked, while ``enabled``, as the
        attempt ends, before any record is built): when not, neither its ``on_attempt`` nor
        the call's ``on_call`` is called for it (this hook must do nothing in either)."""
        ...


Notice = tuple[tuple[Hook, ...], LazyRecord, bool]
"""Hooks owed a notification: who, the snapshot, and True for an attempt (else the call)."""
