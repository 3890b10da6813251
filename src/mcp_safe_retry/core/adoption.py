"""A hedged call's copies, as the call takes them on: ``core/hedging.py`` races the copies,
and through ``Copies`` the call sends a hedge under its own wire id (``content``), books a
copy that decided nothing (``record``), and adopts the copy whose answer settles it
(``adopt``: what follows is fed to the call as the answer to its newest POST).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .attempt_kinds import AttemptKind
from .hedge_copies import Copy, CopyKind
from .jsonrpc import RequestFacts, RequestId, with_id
from .records import RetryOrigin

if TYPE_CHECKING:
    from .events import Head
    from .ledger import Books
    from .outcomes import Classification
    from .outgoing import Outgoing
    from .settling import Settling

__all__ = ["Copies"]


class Copies:
    """One hedged call's copies, as its records and its wire state see them."""

    __slots__ = ("books", "facts", "outgoing", "settling")

    def __init__(
        self, facts: RequestFacts, *, books: Books, outgoing: Outgoing, settling: Settling
    ) -> None:
        self.facts = facts
        self.books = books
        self.outgoing = outgoing
        self.settling = settling

    def content(self, wire_id: RequestId) -> bytes:
        """The body of a hedge: the request under ``wire_id`` (the caller's own cancellation
        still names the first copy, sent under the caller's id: it is not remapped)."""
        self.settling.hedges += 1
        return with_id(self.facts.exact_message(), wire_id)

    def adopt(self, copy: Copy, origin: RetryOrigin) -> None:
        """``copy`` of the race, sent by ``origin``, is the call's newest POST."""
        settling = self.settling
        settling.hedged = True
        settling.copy_number = copy.number
        outgoing = self.outgoing
        outgoing.wire_id = copy.wire_id
        outgoing.sent_at = copy.sent_at
        outgoing.in_flight = True
        outgoing.origin = origin
        outgoing.kind = AttemptKind.HEDGE if copy.kind is CopyKind.HEDGE else AttemptKind.POST

    def record(
        self,
        copy: Copy,
        origin: RetryOrigin,
        classification: Classification,
        head: Head | None,
        error_kind: str | None,
    ) -> None:
        """Book the attempt of a copy that decided nothing (``Books.copy_ended``)."""
        # None adopted: an abandoned call adds no attempt of its own.
        self.outgoing.in_flight = False
        self.books.copy_ended(
            copy, origin, classification, head, error_kind, sent_session=self.outgoing.session
        )
