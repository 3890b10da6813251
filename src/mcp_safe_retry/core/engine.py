"""Per-transport state, shared by the calls a transport makes: policy, history, budget,
breaker, re-send detector, duplicate guard, hooks, the sessions seen (and renewed), and the
source of fresh request ids: the one implementation of ``context.CallContext``. One call's
machine is ``call.Call``; a shell begins one over its engine (``call.begin``) and carries out
what the call returns.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence

from .breaker import Breaker, RecentAnswers, server_key
from .budget import Budget, RetryBudget, answers_inline
from .call import Call
from .call_ledger import Ledger
from .commands import Ask, Read
from .context import Reopens
from .guard import GuardTable
from .hooks import Hook, SwitchedHook
from .idempotency import Idempotency
from .latency import Latencies
from .legacy import LegacyStreams
from .listings import ListingCache
from .live import flush_all, flushing
from .observed import Observed
from .origin import ResendDetector
from .policy import RetryPolicy
from .records import History, Seen
from .session import SESSION_HEADER, Sessions
from .sse import DEFAULT_MAX_EVENT_BYTES
from .tasks import TaskTable
from .validators import check_callable, check_instance, check_protocol

__all__ = ["Engine"]


def _check_settings(
    *,
    policy: object,
    history: object,
    hooks: object,
    scenario: object,
    max_event_bytes: object,
    budget: object,
    breaker: object,
    ledger: object = None,
) -> None:
    """Refuse a transport's setting of the wrong type when it is built, by name."""
    check_instance("policy", policy, RetryPolicy, "a RetryPolicy (mcp_safe_retry.RetryPolicy)")
    check_instance("history", history, History, "a History (mcp_safe_retry.History)")
    check_instance("scenario", scenario, str, "a string")
    if isinstance(hooks, str | bytes | Mapping) or not isinstance(hooks, Iterable):
        raise TypeError(f"hooks must be a sequence of hooks (on_attempt, on_call), got {hooks!r}")
    for hook in hooks:
        check_protocol("a hook", hook, ("on_attempt", "on_call"), "a Hook", optional=False)
    if (
        not isinstance(max_event_bytes, int)
        or isinstance(max_event_bytes, bool)
        or max_event_bytes < 1
    ):
        raise (ValueError if isinstance(max_event_bytes, int) else TypeError)(
            f"max_event_bytes must be an integer >= 1 (bytes), got {max_event_bytes!r}"
        )
    check_protocol("budget", budget, ("record", "allow_retry"), "a budget such as RetryBudget")
    check_protocol("breaker", breaker, ("allow", "record"), "a breaker such as CircuitBreaker")
    check_protocol(
        "ledger",
        ledger,
        ("claim", "put", "settle", "look", "live"),
        "a call ledger such as CallLedger",
    )


class Engine:
    """Per-transport state shared by its calls: policy, history, observers, id source.

    Several retry transports may share one (``AsyncRetryTransport.over``: one per proxy
    route of a client), and with it one history, budget, breaker and session table.

    Time, randomness and the logging hook come from the shell that builds it (``clock``
    monotonic seconds, ``wall_clock`` Unix time, ``rand`` in [0, 1) for the jitter,
    ``id_prefix`` for fresh request ids): nothing here reads the system."""

    def __init__(
        self,
        *,
        policy: RetryPolicy | None = None,
        history: History | None = None,
        hooks: Sequence[Hook] = (),
        logging_hook: SwitchedHook | None = None,
        clock: Callable[[], float],
        wall_clock: Callable[[], float],
        rand: Callable[[], float],
        id_prefix: str,
        resend_window: float = 60.0,
        scenario: str | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        budget: Budget | None = None,
        breaker: Breaker | None = None,
        contain_failures: bool = False,
        contain_http_errors: bool = False,
        listings: ListingCache | None = None,
        ledger: Ledger | None = None,
        owner_prefix: str = "",
    ) -> None:
        _check_settings(
            policy=policy,
            history=history,
            hooks=hooks,
            scenario=scenario,
            max_event_bytes=max_event_bytes,
            budget=budget,
            breaker=breaker,
            ledger=ledger,
        )
        for name, function in (("clock", clock), ("wall_clock", wall_clock), ("rand", rand)):
            check_callable(name, function, "a function")
        if not isinstance(contain_failures, bool):
            raise TypeError(f"contain_failures must be True or False, got {contain_failures!r}")
        self.policy = policy if policy is not None else RetryPolicy()
        self.history = history if history is not None else History()
        # The logging hook first: it is free while it is switched off (its logger is).
        self.hooks: tuple[Hook, ...] = (*([logging_hook] if logging_hook else ()), *hooks)
        self._user_hooks = bool(hooks)
        self._logging_hook = logging_hook
        self.clock = clock
        self.wall_clock = wall_clock
        self.rand = rand
        self.detector = ResendDetector(resend_window)
        # The calls in flight or that may have run: the process's ledger, or the one given.
        self.guard = GuardTable(
            self.policy.duplicate_guard, self.policy.duplicate_window, ledger, clock=clock
        )
        self.scenario = scenario
        self.max_event_bytes = max_event_bytes
        self.read_whole = Read(max_event_bytes)  # the command to read a whole body, made once
        self.budget = budget if budget is not None else RetryBudget()
        self.breaker = breaker
        # A budget or breaker that answers at once (it says so) is asked by the call itself;
        # any other (a shared one) by the shell, through a command (awaited by an async
        # shell, so that a round trip never blocks its event loop).
        self.ask_budget = None if answers_inline(self.budget) else Ask(budget=self.budget)
        # Gives back a token granted for a retry or hedge the breaker then held back.
        self.refund: Callable[[], None] | None = getattr(self.budget, "refund", None)
        self.breaker_inline = answers_inline(breaker)
        # What holds state for other processes (a shared budget, breaker or call ledger):
        # flushed as a transport closes (``flush``).
        self.shared = flushing(self.budget, breaker, ledger)
        self._keys: dict[str, str] = {}  # URL -> server key: a transport talks to few servers
        # (method, tool, the tools' hints) -> (idempotency, guarded): a transport sees few tools
        self._kinds: dict[
            tuple[str, str | None, tuple[frozenset[str], frozenset[str]]], tuple[Idempotency, bool]
        ] = {}
        self.contain_failures = contain_failures
        # A final non-2xx answer to a request is contained too (core/contain.py): for a
        # client that dies of one (mcp 1.x), never for one that recovers by itself (2.x).
        self.contain_http_errors = contain_failures and contain_http_errors
        self.sessions = Sessions()
        self.observed = Observed(self.sessions)
        self.latencies = Latencies()  # per server, for an adaptive hedge delay
        self.tasks = TaskTable()  # the tasks its tools/call requests created (core/tasks.py)
        # The last good answer of each list read (core/listings.py): its own, or a shared one.
        self.listings = listings if listings is not None else ListingCache()
        self.answers = RecentAnswers()  # a read that follows an answer passes the breaker
        self.legacy = LegacyStreams()  # HTTP+SSE event streams open (core/legacy.py)
        self._lock = threading.Lock()  # the resumable calls
        self._resumable: OrderedDict[str, Reopens] = OrderedDict()
        self._prefix = id_prefix
        self._owner_prefix = owner_prefix
        self._owners = itertools.count(1)  # its own count: request ids stay as they were
        self._counter = itertools.count(1)

    def flush(self) -> None:
        """Send what the shared objects hold for the others now, each within its own
        timeout (``live.flush_all``); the shells call it as their transport closes."""
        flush_all(self.shared)

    def caller_edits(self, headers: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
        """The headers of the caller's request (``headers``: those a shell reads, by
        lower-case name) to set before anything reads them: the session another call
        renewed, for a client that still holds the one the server expired."""
        session = headers.get(SESSION_HEADER)
        if session is not None:  # none since 2026-07-28: then nothing else is asked
            renewed = self.sessions.replacement(session)
            if renewed is not None:
                return ((SESSION_HEADER, renewed),)
        return ()

    def resumed(self, last_event_id: str | None) -> Call | None:
        """The call whose broken stream a GET with this ``Last-Event-ID`` resumes, if any."""
        if not last_event_id:
            return None
        with self._lock:
            call = self._resumable.pop(last_event_id, None)
        if not isinstance(call, Call):  # only a Call is ever kept
            return None
        call.reopen(last_event_id)
        return call

    def await_resumption(self, event_id: str, call: Reopens) -> None:
        """Keep ``call`` to be resumed by a GET with this ``Last-Event-ID`` (the newest 256)."""
        with self._lock:
            self._resumable[event_id] = call
            while len(self._resumable) > 256:
                self._resumable.popitem(last=False)

    def server_key(self, url: str) -> str:
        """The breaker's key for a request URL (``breaker.server_key``), remembered."""
        key = self._keys.get(url)
        if key is None:
            if len(self._keys) >= 1024:  # a transport sent to many URLs: start over
                self._keys.clear()
            key = self._keys[url] = server_key(url)
        return key

    def request_kind(self, method: str, tool: str | None) -> tuple[Idempotency, bool]:
        """How safe a request of ``method`` (``tool``: the tool it calls) is to re-send under
        the policy, with the read-only and idempotent tools seen so far
        (``RetryPolicy.idempotency``), and whether the duplicate guard watches it
        (``GuardTable.watches``); remembered: the policy and the guard's mode never change,
        and the tools seen are part of the key."""
        found = self._kinds.get((method, tool, self.observed.hints))
        if found is None:
            hints = self.observed.hints
            if len(self._kinds) >= 1024:  # many tools, or their list changing: start over
                self._kinds.clear()
            idempotency = self.policy.idempotency(method, tool, *hints)
            found = (idempotency, self.guard.watches(method, idempotency))
            self._kinds[method, tool, hints] = found
        return found

    def fresh_id(self) -> str:
        """A request id never used before (the spec forbids re-using one)."""
        return f"mcp-safe-retry-{self._prefix}-{next(self._counter)}"

    def fresh_owner(self) -> str:
        """A name for one guarded call's claim in the ledger, never used before in a fleet
        (``owner_prefix``: the host and process, from the shell; the id prefix is random)."""
        return f"{self._owner_prefix}:{self._prefix}:{next(self._owners)}"

    def listeners(self, attempt: Seen | None = None) -> tuple[Hook, ...]:
        """The hooks to tell now (of ``attempt``, as it ends): none while only the logging
        hook is there and it is off or has nothing to say of it (then no record needs to
        be built to be shown)."""
        logging_hook = self._logging_hook
        if self._user_hooks:
            return self.hooks
        if (
            logging_hook is not None
            and logging_hook.enabled()
            and (attempt is None or logging_hook.wants(attempt))
        ):
            return self.hooks
        return ()
