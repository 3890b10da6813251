"""A retry that waits while the shell asks a shared budget, as a value (not a replayed
event): how the attempt ended (``Settle``) and what follows once the budget answered
(``AfterRead``, ``AfterFailure``, ``AfterStream``), together a ``PendingRetry``.
"""

from __future__ import annotations

from typing import NamedTuple

from .attempt_kinds import ErrorKind
from .events import Head
from .jsonrpc import JSON
from .outcomes import Classification
from .stream import StreamTracker

__all__ = ["AfterFailure", "AfterRead", "AfterStream", "PendingRetry", "Settle"]


class Settle(NamedTuple):
    """How one attempt ended, as ``Call._decide_attempt`` weighs it."""

    classification: Classification
    head: Head | None
    error_kind: str | None = None
    retry_after: float | None = None
    message: JSON = None
    resumable: bool = False


class AfterRead(NamedTuple):
    """What an answer read whole leaves for after its attempt is settled."""

    head: Head
    body: bytes
    message: JSON
    source: bytes | None
    resuming: bool


class AfterFailure(NamedTuple):
    """What a network failure leaves for after its attempt is settled."""

    error: BaseException
    kind: ErrorKind
    resuming: bool


class AfterStream(NamedTuple):
    """What an ended SSE answer leaves for after its attempt is settled."""

    tracker: StreamTracker
    error: BaseException | None
    resume_from: str | None  # the event id a client's GET may resume it from


class PendingRetry(NamedTuple):
    """A retry planned while a budget of the shell's is asked: the attempt to settle with
    its answer, and what follows."""

    settle: Settle
    then: AfterRead | AfterFailure | AfterStream
