"""What a new call is, before its first send: how safe it is to repeat (its idempotency),
who sent it (a first send, or the application's own resend), whether the duplicate guard
saw it before, whether a breaker asks before each send, and, for a caller's cancellation,
what it names on the wire and what it gives up. ``Opened`` reads it from the request and the
transport's state as a call is built (``call.Call`` is an ``Opened`` and goes on from
there), and starts the call's parts with it: its books, its ``outgoing.Outgoing``, how its
attempts settle and how its answer ends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .commands import Ask
from .ending import Ending
from .extensions import CALLER_EXTENSION, IDEMPOTENCY_EXTENSION
from .guard import sends
from .hooks import Notice
from .idempotency import Idempotency
from .jsonrpc import RequestFacts
from .ledger import Books
from .listings import LIST_METHODS, ListingKey, auth_context
from .observed import GiveUp
from .origin import consented, marked_origin
from .outgoing import Outgoing
from .records import Fixed, RetryOrigin
from .servers import for_caller, key_of
from .session import SESSION_HEADER
from .settling import Settling
from .tasks import TASK_METHODS, TaskLink, task_id_of

if TYPE_CHECKING:
    from .context import CallContext
    from .duplicate import Duplicate

__all__ = ["Opened"]

_new = tuple.__new__  # a named tuple from its values in order, without a keyword call
_UNSAFE = Idempotency.UNSAFE
_NONE, _APPLICATION = RetryOrigin.NONE, RetryOrigin.APPLICATION
_NOTED = TASK_METHODS | LIST_METHODS  # requests whose record or answer is kept apart


class Opened:
    """A call as it was opened: the request's facts, its idempotency, with a breaker what
    asks it before a send (``admit``), for a caller's cancellation of a hedged call what
    gives up its race (``gives_up``), and the call's parts (``books``, ``outgoing``,
    ``settling``, ``ending``)."""

    # What most calls never have, as class-level defaults: fewer stores per call.
    admit: Ask | None = None
    gives_up: GiveUp | None = None
    duplicate: Duplicate | None = None  # the earlier call this one repeats (core/guard.py)
    # The notifications the hooks are owed since last asked: the books' own ``Books.owed``,
    # which the shells ask after each command (no call of the call's in between).
    owed: Callable[[], list[Notice]]

    def __init__(
        self,
        context: CallContext,
        facts: RequestFacts,
        headers: Mapping[str, str],
        extensions: Mapping[str, Any],
        url: object = None,
    ) -> None:
        """Open the call for ``facts``, POSTed to ``url`` with ``headers``.

        Each fact is read only as far as a decision needs it: the server's key when a
        breaker asks before each send, or (worked out when first read: ``servers.ServerKey``)
        when the duplicate guard watches the call; the caller's consent only when the guard
        remembers a call this one may repeat. The re-send detector sees every request.
        """
        self._context = context
        self.facts = facts
        session = headers.get(SESSION_HEADER)
        now = context.clock()
        observed = context.observed
        origin = marked_origin(extensions)
        content = guarded = duplicate = task = listing = ledger = owner = None
        if facts.id is None:  # a notification: never re-sent, guarded or asked about
            idempotency = _UNSAFE
            if facts.method == "notifications/cancelled":
                content = observed.remap_cancellation(facts, session)
                self.gives_up = observed.race_cancelled(facts, session)
                observed.caller_gone(facts, session)  # a late answer to it ran unseen
            if origin is None:
                origin = _NONE
        else:
            declared = extensions.get(IDEMPOTENCY_EXTENSION)
            if declared is None:
                idempotency, watched = context.request_kind(facts.method, facts.tool)
            else:  # declared by the request itself: a valid one wins
                idempotency = (
                    _declared(declared) or context.request_kind(facts.method, facts.tool)[0]
                )
                watched = context.guard.watches(facts.method, idempotency)
            breaker = context.breaker
            where = url  # written out once, by the first part that needs the server's key
            if facts.method in _NOTED:  # a task's request, or a list read
                if facts.method in TASK_METHODS:  # names a task: the record names its creator
                    task_id = task_id_of(facts.parsed)
                    if task_id is not None:
                        task = TaskLink(task_id, None, context.tasks.origin(task_id))
                else:  # its last good answer is kept (core/listings.py)
                    where = str(url)
                    listing = ListingKey(
                        context.server_key(where),
                        facts.digest,
                        auth_context(headers.get("authorization")),
                    )
            if breaker is not None:
                where = str(url)
                self.admit = Ask(breaker, context.server_key(where))
            if origin is None:
                is_resend = context.detector.is_resend(facts.identity, now)
                origin = _APPLICATION if is_resend else _NONE
            if watched:  # the duplicate guard (core/guard.py): UNSAFE tool calls only
                keys: Callable[[str], str] = context.server_key
                caller = extensions.get(CALLER_EXTENSION)
                if type(caller) is str:  # one transport sending for many (the gateway)
                    keys = for_caller(keys, caller)
                guarded = key_of((where, keys))
                # In the ledger from now (core/call_ledger.py), before its request leaves.
                owner = context.fresh_owner()
                duplicate, ledger = context.guard.claim(
                    guarded,
                    facts,
                    consented(extensions),
                    owner=owner,
                    started_at=context.wall_clock(),
                    session_id=session,
                    now=now,
                )
                if duplicate is not None:
                    self.duplicate = duplicate
                    if origin is _NONE:
                        origin = _APPLICATION  # it repeats a call sent before
        fixed = _new(
            Fixed,
            (
                facts,
                idempotency,
                observed.client,
                headers.get("mcp-protocol-version") or observed.protocol_version,
                context.scenario,  # the transport's label, set once when it was built
                now,  # start
                context.wall_clock(),  # started_at
                duplicate,
                task,
                ledger,
            ),
        )
        self.books = books = Books(context, fixed, session, guarded)
        if owner is not None and facts.id is not None:
            books.owner = owner
            if sends(duplicate):
                books.watched_in = (session,)  # its caller may yet give up on it
                observed.watching(session, facts.id, books)
                context.guard.ledger.live(owner, books)
        self.owed = books.owed
        self.outgoing = outgoing = Outgoing(facts.id, now, session, origin, content)
        self.settling = Settling(context, facts, books, outgoing, self.admit)
        self.ending = ending = Ending(context, facts, books, outgoing)
        if listing is not None:
            books.listing = listing
            ending.special = True
        if context.legacy.streams and facts.id is not None:  # an HTTP+SSE POST? (legacy.py)
            ending.answers_on = answers_on = context.legacy.stream(str(url))
            if answers_on is not None:
                ending.special = True

    @property
    def idempotency(self) -> Idempotency:
        """How safe the call's request is to repeat (as its record says)."""
        return self.books.fixed.idempotency


def _declared(value: Any) -> Idempotency | None:
    """The idempotency a request declares for itself (its extension's ``value``), if valid."""
    try:
        return Idempotency(value)
    except ValueError:
        return None
