"""What a new call is, before its first send: how safe it is to repeat (its idempotency),
who sent it (a first send, or the application's own resend), whether the duplicate guard
saw it before, whether a breaker asks before each send, and, for a caller's cancellation,
what it names on the wire and what it gives up. ``opened`` reads it from the request and the
transport's state, and starts the call's books and its ``outgoing.Outgoing`` with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from .commands import Ask
from .extensions import IDEMPOTENCY_EXTENSION
from .idempotency import Idempotency
from .jsonrpc import RequestFacts
from .ledger import Books
from .observed import GiveUp, client_info
from .origin import consented, marked_origin
from .outgoing import Outgoing
from .records import RetryOrigin
from .session import SESSION_HEADER

if TYPE_CHECKING:
    from .context import CallContext

__all__ = ["Opened", "opened"]


class Opened(NamedTuple):
    """A new call, as ``opened`` found it."""

    idempotency: Idempotency
    admit: Ask | None  # with a breaker: what asks it before a send
    gives_up: GiveUp | None  # a caller's cancellation of a hedged call: what gives up its race
    outgoing: Outgoing
    books: Books


def opened(
    context: CallContext,
    facts: RequestFacts,
    headers: Mapping[str, str],
    extensions: Mapping[str, Any],
    url: object = None,
) -> Opened:
    """What the call for ``facts``, POSTed to ``url`` with ``headers``, is."""
    breaker = context.breaker
    admit = None
    if breaker is not None and facts.id is not None:
        admit = Ask(breaker, context.server_key(str(url)))
    session = headers.get(SESSION_HEADER)
    observed = context.observed
    idempotency = (
        Idempotency.UNSAFE
        if facts.id is None
        else _declared(extensions)
        or context.policy.idempotency(facts.method, facts.tool, observed.read_only_tools)
    )
    now = context.clock()
    content = gives_up = None
    if facts.method == "notifications/cancelled":
        content = observed.remap_cancellation(facts, session)
        gives_up = observed.race_cancelled(facts, session)
    origin = marked_origin(extensions)
    if origin is None:
        is_resend = facts.id is not None and context.detector.is_resend(facts.identity, now)
        origin = RetryOrigin.APPLICATION if is_resend else RetryOrigin.NONE
    guard = context.guard  # the duplicate guard (core/guard.py): UNSAFE tool calls only
    guarded = duplicate = None
    if guard.guards(facts, idempotency):
        guarded = context.server_key(str(url))
        duplicate = guard.look(guarded, facts.identity, consented(extensions), now)
        if duplicate is not None and origin is RetryOrigin.NONE:
            origin = RetryOrigin.APPLICATION  # it repeats a call sent before
    books = Books(
        context,
        facts,
        idempotency,
        start=now,
        started_at=context.wall_clock(),
        client=client_info(facts) or observed.client,
        protocol_version=headers.get("mcp-protocol-version") or observed.protocol_version,
        session=session,
        guarded=guarded,
        duplicate=duplicate,
    )
    outgoing = Outgoing(facts.id, now, session, origin, content)
    return Opened(idempotency, admit, gives_up, outgoing, books)


def _declared(extensions: Mapping[str, Any]) -> Idempotency | None:
    """The idempotency one request declares for itself, if it does (and validly)."""
    value = extensions.get(IDEMPOTENCY_EXTENSION)
    if value is None:
        return None
    try:
        return Idempotency(value)
    except ValueError:
        return None
