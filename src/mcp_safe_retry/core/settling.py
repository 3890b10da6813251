"""The decision after an attempt, as a part the call holds: what follows the attempt that
ended (retry, or the call's verdict), its record, and the retry it plans.

``Settling.decide`` weighs how the attempt ended (``pending.Settle``) against the policy, the
retry budget and the breaker's count, and records the attempt (``record``); when a budget of
the shell's must be asked first, it answers ``ASK_BUDGET`` and counts nothing, and the
attempt is settled again once the budget answered (``answer``). A retry decided here is
prepared on the call's ``outgoing.Outgoing`` (a fresh wire id, the body under it, its
backoff), and a retry that is never sent gives its budget token back (``stop_planned``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .attempt_kinds import AttemptKind, ErrorKind
from .commands import Send
from .decision import RESUMABLE, SETTLED, Decision, Reason, decide, is_transient
from .hedge_copies import CopyState
from .jsonrpc import JSON, RequestFacts, with_id
from .outcomes import Classification, Outcome, verdict
from .records import RetryOrigin, Seen
from .state import expect
from .tally import counted, refund, told

if TYPE_CHECKING:
    from .commands import Ask
    from .context import CallContext
    from .events import Head
    from .ledger import Books
    from .outgoing import Outgoing
    from .pending import PendingRetry, Settle

__all__ = ["ABANDONED", "ASK_BUDGET", "THROTTLED", "Settling"]

THROTTLED = Decision.stop(Reason.THROTTLED)
ABANDONED = Decision.stop(Reason.ABANDONED)
ASK_BUDGET = Decision(retry=True, reason=Reason.THROTTLED)
"""What ``Settling.decide`` answers when a shared budget must be asked before a retry is
decided: the attempt is settled again (from its ``PendingRetry``) once the budget answered."""

_SEND_AS_IS = Send(None)
_seen = tuple.__new__  # a Seen from its values in field order (no keyword call)
_APPLICATION = RetryOrigin.APPLICATION
_POSTED, _RESUMED, _RENEWING = AttemptKind.POST, AttemptKind.RESUME, AttemptKind.REINITIALISE
_WON, _FAILED = str(CopyState.WON), str(CopyState.FAILED)  # a hedged call's fates
_STOP_REDIRECT = SETTLED[Outcome.REDIRECT]
_HELD_BACK = Outcome.CIRCUIT_OPEN
# Ends that keep a list read's failure: the client resumes its stream, or the caller went.
_NOT_STALE = frozenset({Reason.RESUMABLE, Reason.ABANDONED})


class Settling:
    """How one call's attempts are settled, and what the call's verdict is (``done``)."""

    # What most calls never change, as class-level defaults: fewer stores per call.
    done = False  # the call has its verdict (a resumption opens it again)
    _planned: PendingRetry | None = None  # the attempt to settle once the budget answers
    _answered = False  # while settling again: the budget has answered...
    _stop: Decision | None = None  # ...and this stops the call instead of the retry
    _spent = False  # the budget gave a token for the retry planned, not sent yet
    # A hedged call (core/hedging.py): its attempts are its copies, numbered as sent, each
    # with a fate; hedges use up no retries.
    hedged = False
    copy_number = 0
    hedges = 0

    def __init__(
        self,
        context: CallContext,
        facts: RequestFacts,
        books: Books,
        outgoing: Outgoing,
        admit: Ask | None,
    ) -> None:
        self._context = context
        self.facts = facts
        self.books = books
        self.outgoing = outgoing
        self._admit = admit  # the breaker, told how each call ends

    @property
    def planned(self) -> bool:
        """Whether an attempt waits for the shared budget's answer."""
        return self._planned is not None

    def plan(self, pending: PendingRetry) -> None:
        """Keep ``pending`` until the shell has asked the budget."""
        self._planned = pending

    def answer(self, stop: Decision | None) -> tuple[PendingRetry, Decision]:
        """Settle the attempt that waited for the budget, now that it answered: ``stop``
        ends the call instead of the retry, None lets the retry go."""
        pending, self._planned = expect(self._planned, "budget asked"), None
        self._answered, self._stop = True, stop
        return pending, self.decide(pending.settle)

    def decide_now(self, settle: Settle, stop: Decision) -> Decision:
        """Settle ``settle`` without asking any budget: ``stop`` ends the call if a retry
        would follow (the caller has gone)."""
        self._answered, self._stop = True, stop
        return self.decide(settle)

    def send(self) -> Send:
        """The request goes out now (the first send, or the retry planned: its budget
        token, if it took one, is used)."""
        if self._spent:
            self._spent = False
        outgoing = self.outgoing
        outgoing.sent_at = self._context.clock()
        outgoing.in_flight = True
        outgoing.head = None
        content = outgoing.content
        return _SEND_AS_IS if content is None else Send(content, _POSTED, outgoing.edits)

    def give_back(self) -> None:
        """The retry the budget gave a token for is not sent: the token goes back."""
        if self._spent:
            self._spent = False
            refund(self._context)

    def stop_planned(self, stop: Decision, now: float) -> None:
        """The retry the last attempt planned is never sent: the call ends with it."""
        self.give_back()
        self.done = True
        self.books.amended(stop, now, self.outgoing.wire_id)

    def abandoned(self, exc: BaseException | None, head: Head | None) -> None:
        """The call ended without a verdict, no attempt waiting for the budget: the caller
        closed the stream early (``exc`` None), or ``exc`` ended it; ``head``: that of the
        SSE answer flowing, if one was."""
        if exc is None:
            detail = "closed by the caller before the response"
        else:
            detail = f"ended by {type(exc).__name__}: {exc}"[:200]
        now = self._context.clock()
        in_flight = self.outgoing.in_flight
        held = not self.books.attempts and not in_flight  # awaiting the breaker: unsent
        if in_flight or held:
            if head is not None:  # an SSE answer was flowing
                ended = verdict(Outcome.STREAM_INCOMPLETE, detail=detail)
            else:
                kind = ErrorKind.INTERNAL if isinstance(exc, Exception) else ErrorKind.CANCELLED
                ended = verdict(Outcome.NETWORK_ERROR, detail=detail, error_kind=kind)
            self.record(
                ABANDONED,
                ended,
                head=head,
                error_kind=ended.error_kind,
                retry_after=None,
                message=None,
                now=now,
                kind=AttemptKind.HELD if held else None,
            )
            return
        # Between attempts (in the backoff, or waiting for the session lock).
        self.stop_planned(ABANDONED, now)

    def decide(self, settle: Settle) -> Decision:
        """Decide what follows the attempt that ended as ``settle`` says, and record it; or,
        when a budget of the shell's must be asked first, ``ASK_BUDGET`` (nothing counted)."""
        classification, head, error_kind, retry_after, message, resumable = settle
        context = self._context
        now = context.clock()
        decision = SETTLED.get(classification.outcome)
        if decision is None:  # a failure: weighed against the policy, the attempt, the time
            books = self.books
            decision = decide(
                context.policy,
                idempotency=books.fixed.idempotency,
                classification=classification,
                attempt=len(books.attempts) + 1 - self.hedges,
                elapsed=now - books.start,
                retry_after=retry_after,
                rand=context.rand,
            )
            retry = decision.retry
            failed = is_transient(context.policy, classification)
        else:  # a success or a redirect: settled by its outcome, no failure
            retry = failed = False
        if resumable or (retry and self.outgoing.resuming):
            # Resuming is the client's move (and a GET cannot be re-sent as the POST).
            decision, retry = RESUMABLE, False
        if self.facts.id is not None:
            answered = self._answered
            if retry and not answered and context.ask_budget is not None:
                return ASK_BUDGET  # nothing counted yet: settled again once the shell asked
            if decision is not _STOP_REDIRECT:  # a 3xx hop: the Location's request counts
                counted(context, failed)
            if answered:  # settled again with the budget's answer (last: a True spends a token)
                self._answered = False
                stop = self._stop
                if retry and stop is not None:
                    decision, retry = stop, False
            elif retry and not context.budget.allow_retry():
                decision, retry = THROTTLED, False
            # The breaker's ratio counts the call once, when no retry follows.
            admit = self._admit
            if admit is not None:  # a hop: the server answered, but ended no call
                hop = decision is _STOP_REDIRECT
                told(admit, failed, retry_after, ends_call=not (retry or hop))
                if not failed:
                    context.answers.answered(admit.key, now)
            if retry:
                self._spent = True
        return self.record(
            decision,
            classification,
            head=head,
            error_kind=error_kind,
            retry_after=retry_after,
            message=message,
            now=now,
        )

    def record(
        self,
        decision: Decision,
        classification: Classification,
        *,
        head: Head | None,
        error_kind: str | None,
        retry_after: float | None,
        message: JSON,
        now: float,
        final: Classification | None = None,
        kind: AttemptKind | None = None,
    ) -> Decision:
        """Append the attempt that just ended, with what follows it, for the hooks too
        (``final``: the call's verdict if it ends here, when not the attempt's own)."""
        books = self.books
        outgoing = self.outgoing
        outgoing.in_flight = False
        resuming = outgoing.resuming
        hedged = self.hedged
        renewal = outgoing.renewal
        retry = decision.retry
        if books.listing is not None and not retry and final is None:
            final = self._stale(decision, classification)  # a list read served stale?
        if kind is None:
            kind = _RESUMED if resuming else outgoing.kind if renewal is None else _RENEWING
        attempt = _seen(
            Seen,
            (
                self.copy_number if hedged else len(books.attempts) + 1,  # number
                _APPLICATION if resuming else outgoing.origin,  # retry_origin
                outgoing.wire_id,
                classification,
                head,
                error_kind,
                outgoing.delay,
                retry_after,
                decision,
                outgoing.sent_at,
                now,  # ended_at
                kind,
                outgoing.session if renewal is None else renewal.session,  # session_id
                (_FAILED if retry else _WON) if hedged and renewal is None else None,  # fate
            ),
        )
        outgoing.resuming = False
        if retry:
            books.ended(attempt, head, None, now, None, hedged=hedged)
            self._prepare_retry(decision)
        else:
            self.done = True
            books.ended(
                attempt,
                head,
                classification if final is None else final,
                now,
                outgoing.wire_id,
                message=message,
                hedged=hedged,
            )
        if hedged:
            self.copy_number = len(books.attempts) + 1  # an attempt after the race
        return decision

    def _stale(self, decision: Decision, classification: Classification) -> Classification | None:
        """A list read that failed with no retry to follow (a transient failure after its
        retries, or held back by the breaker) gets its last good answer instead, when one
        is kept (core/listings.py): the verdict that says so, its answer kept on the books.
        None: it ends as it failed (no answer kept, another failure, a stream the client
        resumes, a caller gone)."""
        if decision.reason in _NOT_STALE:
            return None
        context = self._context
        outcome = classification.outcome
        if outcome is not _HELD_BACK and not is_transient(context.policy, classification):
            return None
        listing = self.books.listing
        assert listing is not None  # only a list read is asked
        found = context.listings.last(listing, context.wall_clock())
        if found is None:
            return None
        result, age = found
        self.books.stale = result
        why = f"HTTP {classification.status}" if classification.status else str(outcome)
        return verdict(
            Outcome.RPC_SUCCESS,
            result_type="complete",
            detail=f"served stale: the last good answer, {age:.1f} s old, after {why}",
            stale_age=age,
        )

    def _prepare_retry(self, decision: Decision) -> None:
        context = self._context
        facts = self.facts
        outgoing = self.outgoing
        outgoing.delay = decision.delay
        outgoing.kind = _POSTED
        outgoing.origin = RetryOrigin.SDK
        if facts.id is None:  # a notification has no id to change: it goes as it came
            if outgoing.content is None:
                outgoing.content = facts.source
            return
        outgoing.wire_id = context.fresh_id()
        outgoing.content = with_id(facts.exact_message(), outgoing.wire_id)
        context.observed.resent(self.books.session, facts.id, outgoing.wire_id)
        if context.legacy.streams:  # its answer may come on an HTTP+SSE event stream
            context.legacy.resent(outgoing.wire_id, facts.id)
