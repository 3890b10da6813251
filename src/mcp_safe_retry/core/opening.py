"""What a new call is, before its first send: how safe it is to repeat (its idempotency),
who sent it (a first send, or the application's own resend), whether the duplicate guard
saw it before, whether a breaker asks before each send, and, for a caller's cancellation,
what it names on the wire and what it gives up. ``opened`` reads it from the request and the
transport's state, and starts the call's books and its ``outgoing.Outgoing`` with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from .commands import Ask
from .extensions import IDEMPOTENCY_EXTENSION
from .idempotency import Idempotency
from .jsonrpc import RequestFacts
from .ledger import Books
from .observed import GiveUp, client_info
from .origin import consented, marked_origin
from .outgoing import Outgoing
from .records import RetryOrigin
from .servers import ServerKey
from .session import SESSION_HEADER

if TYPE_CHECKING:
    from .context import CallContext

__all__ = ["Opened", "opened"]


Opened: TypeAlias = tuple[Idempotency, Ask | None, GiveUp | None, Outgoing, Books]
"""A new call, as ``opened`` found it: its idempotency; with a breaker, what asks it before a
send; for a caller's cancellation of a hedged call, what gives up its race; the request on
the wire; the books. (A plain tuple: one is made per call, and its builder is C.)"""


def opened(
    context: CallContext,
    facts: RequestFacts,
    headers: Mapping[str, str],
    extensions: Mapping[str, Any],
    url: object = None,
) -> Opened:
    """What the call for ``facts``, POSTed to ``url`` with ``headers``, is.

    Each fact is read only as far as a decision needs it: the server's key when a breaker
    asks before each send, or (worked out when first read: ``servers.ServerKey``) when the
    duplicate guard watches the call; the caller's consent only when the guard remembers a
    call this one may repeat. The re-send detector sees every request.
    """
    session = headers.get(SESSION_HEADER)
    now = context.clock()
    observed = context.observed
    origin = marked_origin(extensions)
    admit = content = gives_up = guarded = duplicate = None
    if facts.id is None:  # a notification: never re-sent, guarded or asked about
        idempotency = Idempotency.UNSAFE
        if facts.method == "notifications/cancelled":
            content = observed.remap_cancellation(facts, session)
            gives_up = observed.race_cancelled(facts, session)
        if origin is None:
            origin = RetryOrigin.NONE
    else:
        declared = extensions.get(IDEMPOTENCY_EXTENSION)
        idempotency = (declared is not None and _declared(declared)) or context.idempotency(
            facts.method, facts.tool
        )
        breaker = context.breaker
        if breaker is not None:
            admit = Ask(breaker, context.server_key(str(url)))
        if origin is None:
            is_resend = context.detector.is_resend(facts.identity, now)
            origin = RetryOrigin.APPLICATION if is_resend else RetryOrigin.NONE
        guard = context.guard  # the duplicate guard (core/guard.py): UNSAFE tool calls only
        if guard.guards(facts, idempotency):
            guarded = ServerKey(url, context.server_key)
            if len(guard):  # it remembers a call that may have run: is this one a repeat?
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
    return idempotency, admit, gives_up, outgoing, books


def _declared(value: Any) -> Idempotency | None:
    """The idempotency a request declares for itself (its extension's ``value``), if valid."""
    try:
        return Idempotency(value)
    except ValueError:
        return None
