"""What a call's parts may read of the transport they run in: its clocks and randomness, its
policy and limits (and the idempotency the policy gives a request, and whether the duplicate
guard watches it), the source of fresh ids, the shared tables (sessions, the duplicate guard,
the re-send detector, latencies, the history) and the budget and breaker as the call asks
them. ``engine.Engine`` is the one
implementation; the parts see only this, so nothing in the call machine imports the engine
(the engine builds nothing of a call's: ``call.begin`` does).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from .breaker import Breaker, RecentAnswers
from .budget import Budget
from .commands import Ask, Read
from .guard import GuardTable
from .hooks import Hook
from .idempotency import Idempotency
from .latency import Latencies
from .legacy import LegacyStreams
from .listings import ListingCache
from .observed import Observed
from .origin import ResendDetector
from .policy import RetryPolicy
from .records import History, Seen
from .session import Sessions
from .tasks import TaskTable

__all__ = ["CallContext", "Reopens"]


class Reopens(Protocol):
    """A call whose broken stream a client's GET with ``Last-Event-ID`` may resume."""

    def reopen(self, last_event_id: str) -> None: ...


class CallContext(Protocol):
    """The per-transport state one call reads and tells (see the module docstring)."""

    # Time and randomness: passed in, never read from the system here.
    clock: Callable[[], float]
    wall_clock: Callable[[], float]
    rand: Callable[[], float]
    # Rules and limits.
    policy: RetryPolicy
    max_event_bytes: int
    read_whole: Read  # the command to read a body whole, made once
    contain_failures: bool
    contain_http_errors: bool
    scenario: str | None
    # The budget and the breaker, as a call asks them.
    budget: Budget
    breaker: Breaker | None
    breaker_inline: bool
    ask_budget: Ask | None  # None: the budget answers inline (the call asks it)
    refund: Callable[[], None] | None
    # Tables shared by the transport's calls.
    history: History
    observed: Observed
    sessions: Sessions
    detector: ResendDetector
    guard: GuardTable
    latencies: Latencies
    tasks: TaskTable
    listings: ListingCache
    answers: RecentAnswers  # when each server last answered (a read then passes its breaker)
    legacy: LegacyStreams  # the HTTP+SSE event streams open, by the endpoint they announced

    def fresh_id(self) -> str: ...

    def fresh_owner(self) -> str: ...

    def server_key(self, url: str) -> str: ...

    def request_kind(self, method: str, tool: str | None) -> tuple[Idempotency, bool]: ...

    def listeners(self, attempt: Seen | None = None) -> tuple[Hook, ...]: ...

    def await_resumption(self, event_id: str, call: Reopens) -> None: ...
