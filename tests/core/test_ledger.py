"""What one call leaves behind (core/ledger.py): its record, what its hooks are told and when,
its entry in the history, driven through a call's events."""

from __future__ import annotations

import gc
import json
import weakref

from mcp_safe_retry import History
from mcp_safe_retry.core.commands import Send
from mcp_safe_retry.core.events import Head
from mcp_safe_retry.core.ledger import Snapshot
from mcp_safe_retry.core.outcomes import verdict
from mcp_safe_retry.core.records import LazyRecord, Seen
from mcp_safe_retry.instrumentation.hooks import publish
from mcp_safe_retry.records import Outcome, RetryOrigin
from tests.core.drive import JSON, Clock, answer, begin, engine, sent_message


def test_hooks_hear_nothing_until_the_shell_publishes() -> None:
    heard: list[str] = []

    class Ear:
        def on_attempt(self, record: object, attempt: object) -> None:
            heard.append("attempt")

        def on_call(self, record: object) -> None:
            heard.append("call")

    call = begin(engine(hooks=[Ear()]))
    call.start()
    call.headed(Head(503))
    call.received(b"")
    assert heard == []  # the decision told no one
    publish(call.owed())
    assert heard == ["attempt"]
    resend = call.slept()
    assert isinstance(resend, Send) and resend.content is not None
    call.headed(JSON)
    call.received(answer(json.loads(resend.content)["id"]))
    publish(call.owed())
    assert heard == ["attempt", "attempt", "call"]


def test_a_snapshot_read_later_holds_the_values_of_when_its_attempt_ended() -> None:
    clock = Clock()
    snapshots: list[LazyRecord] = []

    class Keep:
        def on_attempt(self, record: object, attempt: object) -> None: ...

        def on_call(self, record: object) -> None: ...

    e = engine(clock, hooks=[Keep()])
    call = begin(e)
    call.start()
    clock.now = 0.5
    call.headed(Head(503, session_id="s-1"))
    call.received(b"")
    snapshots += [snapshot for _, snapshot, _ in call.owed()]
    clock.now = 2.0
    resend = call.slept()
    clock.now = 3.0
    call.headed(JSON)
    call.received(answer(sent_message(resend)["id"]))
    snapshots += [snapshot for _, snapshot, _ in call.owed()]
    # Read only now, after the call ended: each as it was when taken, built once.
    first, last, ended = (s.get() for s in snapshots)  # the last attempt's is the call's
    assert (len(first.attempts), first.complete, first.duration) == (1, False, 0.5)
    assert first.session_id == "s-1"
    assert [a.decision.action for a in first.attempts if a.decision] == ["retry"]
    assert (len(ended.attempts), ended.complete, ended.duration) == (2, True, 3.0)
    assert ended.attempts[1].duration == 1.0  # sent at 2.0, answered at 3.0
    assert last is ended and e.history.last() is ended and call.ref.current is ended


def test_a_retry_never_sent_leaves_the_snapshot_taken_before_it_as_it_was() -> None:
    call = begin(engine())
    call.start()
    call.headed(Head(503))
    call.received(b"")
    before = call.ref.snapshot
    call.abandoned(None)  # in the backoff: the retry planned is never sent
    [attempt] = before.get().attempts
    assert attempt.decision is not None and attempt.decision.retry
    [amended] = call.ref.current.attempts
    assert amended.decision is not None and amended.decision.reason == "abandoned"


def test_a_snapshot_is_equal_only_to_itself() -> None:
    call = begin(engine())
    call.start()
    call.headed(Head(503))
    call.received(b"")
    snapshot = call.ref.snapshot
    assert isinstance(snapshot, Snapshot)
    twin = Snapshot(*snapshot)
    assert twin.get() == snapshot.get()
    assert twin != snapshot and snapshot == call.ref.snapshot


def _copy_attempt(number: int) -> Seen:
    return Seen(
        number=number,
        retry_origin=RetryOrigin.SDK,
        wire_id=f"w{number}",
        classification=verdict(Outcome.NETWORK_ERROR, error_kind="connect"),
        head=None,
        error_kind="connect",
        delay=0.0,
        retry_after=None,
        decision=None,
        sent_at=0.0,
        ended_at=0.0,
        kind="hedge",
        fate="failed",
    )


def test_a_hedged_call_s_attempts_are_sorted_into_a_new_list_earlier_snapshots_keep_theirs() -> (
    None
):
    call = begin(engine())
    books = call.books
    books.ended(_copy_attempt(3), None, None, 1.0, None, hedged=True)
    third = books.snapshot
    books.ended(_copy_attempt(2), None, None, 2.0, None, hedged=True)
    assert [a.number for a in third.get().attempts] == [3]
    assert [a.number for a in books.snapshot.get().attempts] == [2, 3]


def test_a_finished_call_s_books_and_snapshots_are_freed_without_the_garbage_collector() -> None:
    """A snapshot holds the call's fixed facts, never its books: no cycle between them, so
    a call the history has pushed out is freed as soon as nothing holds it."""
    e = engine(history=History(maxlen=1))
    gc.disable()
    try:
        call = begin(e)
        call.start()
        call.headed(JSON)
        call.received(answer(7))
        assert e.history.last() is call.ref.current  # the same snapshot, built once
        books, record = weakref.ref(call.books), weakref.ref(call.ref.current)
        del call
        assert books() is None  # the history holds the snapshot, not the books
        other = begin(e, request_id=8)
        other.start()
        other.headed(JSON)
        other.received(answer(8))
        assert record() is None  # pushed out of the history: its snapshot is gone at once
    finally:
        gc.enable()
