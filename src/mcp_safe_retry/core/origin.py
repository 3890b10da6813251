"""Who re-sent a call: explicit marks (context manager, request extension) and detection;
and the consent to re-send a call that may have run (``allow_duplicate``)."""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping

from .extensions import ALLOW_DUPLICATE_EXTENSION, ORIGIN_EXTENSION
from .jsonrpc import Digest
from .records import RetryOrigin

__all__ = [
    "ResendDetector",
    "allow_duplicate",
    "consented",
    "marked_origin",
    "retry_origin",
]

_allowed: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "mcp_safe_retry_allow_duplicate", default=False
)

_marked: contextvars.ContextVar[RetryOrigin | None] = contextvars.ContextVar(
    "mcp_safe_retry_origin", default=None
)


@contextlib.contextmanager
def retry_origin(origin: str | RetryOrigin) -> Iterator[None]:
    """Mark the requests sent inside the block as re-sent by ``origin``.

    Only ``"application"`` and ``"manual"`` can be marked: ``none`` and ``sdk`` are the
    engine's own to give. The mark follows the context, so it reaches a transport called in
    the same task or thread; the MCP SDKs send from a task of their own, for which the
    transport detects application re-sends instead (see ``ResendDetector``).
    """
    origin = RetryOrigin(origin)
    if origin not in (RetryOrigin.APPLICATION, RetryOrigin.MANUAL):
        raise ValueError(f"only 'application' or 'manual' can be marked, not {origin.value!r}")
    token = _marked.set(origin)
    try:
        yield
    finally:
        _marked.reset(token)


def marked_origin(extensions: Mapping[str, object]) -> RetryOrigin | None:
    """The origin a request was marked with, by extension first, then by context."""
    value = extensions.get(ORIGIN_EXTENSION)
    if value is not None:
        try:
            origin = RetryOrigin(str(value))
        except ValueError:
            origin = None
        if origin in (RetryOrigin.APPLICATION, RetryOrigin.MANUAL):
            return origin
    return _marked.get()


@contextlib.contextmanager
def allow_duplicate() -> Iterator[None]:
    """Send the calls made inside the block even if the same UNSAFE call may have run.

    The duplicate guard holds back a re-send of an UNSAFE tool call whose earlier call was
    sent and got no answer; inside this block such a call is sent (and recorded with the
    earlier call named). Like ``retry_origin`` the consent follows the context: it reaches a
    transport called in the same task or thread, and ``mcp`` 2.x, which sends each request
    in its caller's context. For a client that sends from a task of its own (``mcp`` 1.x),
    use the request extension ``ALLOW_DUPLICATE_EXTENSION`` or the policy's
    ``duplicate_guard``.
    """
    token = _allowed.set(True)
    try:
        yield
    finally:
        _allowed.reset(token)


def consented(extensions: Mapping[str, object]) -> bool:
    """Whether a request may go through the duplicate guard: by extension, or by context."""
    return extensions.get(ALLOW_DUPLICATE_EXTENSION) is True or _allowed.get()


class ResendDetector:
    """Remembers recently failed calls so a repeat of one is recognised as a re-send.

    Args:
        window: seconds during which a repeat of a failed call counts as a re-send.
        capacity: how many failed calls are remembered (oldest forgotten first).
    """

    def __init__(self, window: float = 60.0, capacity: int = 1024) -> None:
        self.window = window
        self._capacity = capacity
        self._failed: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """How many failed calls are remembered now."""
        return len(self._failed)

    def is_resend(self, digest: str | Digest, now: float) -> bool:
        """Whether a call with this digest failed within the window (a ``Digest`` is only
        worked out when some failed call is remembered)."""
        if not self._failed:  # the common case, read without the lock
            return False
        digest = str(digest)
        with self._lock:
            failed_at = self._failed.get(digest)
            return failed_at is not None and now - failed_at <= self.window

    def finished(self, digest: str | Digest, failed: bool, now: float) -> None:
        """Remember a failed call, forget a call that succeeded (a ``Digest`` is only worked
        out when there is something to remember or forget)."""
        if not failed and not self._failed:  # nothing to forget
            return
        digest = str(digest)
        with self._lock:
            if not failed:
                self._failed.pop(digest, None)
                return
            self._failed[digest] = now
            self._failed.move_to_end(digest)
            while len(self._failed) > self._capacity:
                self._failed.popitem(last=False)
