"""A call renewing the session the server expired (core/renewing.py), driven through the
call's events: the lock, the replayed initialize, the re-send in the new session."""

from __future__ import annotations

from mcp_safe_retry.core.attempt_kinds import AttemptKind
from mcp_safe_retry.core.call import begin as begin_call
from mcp_safe_retry.core.commands import Answer, Lock, Read, Send, Unlock
from mcp_safe_retry.core.events import Head
from mcp_safe_retry.records import Decision, Reason
from tests.core.drive import (
    INITIALIZE,
    JSON,
    REQUEST,
    URL,
    answer,
    engine,
    handed_on,
    initialized,
    opened_session,
    request,
    sent_message,
)


def test_a_lost_session_is_renewed_under_the_lock_then_the_call_is_resent_in_it() -> None:
    e = engine()
    opened_session(e)
    call = begin_call(e, request(), {"mcp-session-id": "s-1"}, {}, URL)
    assert call is not None
    assert call.start() == Send(None, AttemptKind.POST, ())
    assert call.headed(Head(404, "application/json")) == Read(e.max_event_bytes)
    assert call.received(b"") == Lock()
    # Under the lock: the client's initialize, replayed under a fresh id, outside a session.
    initialize = call.locked()
    replayed = sent_message(initialize)
    assert replayed == {**INITIALIZE, "id": replayed["id"]}
    assert replayed["id"] != 0
    assert type(initialize) is Send and initialize.kind is AttemptKind.REINITIALISE
    assert ("mcp-session-id", None) in initialize.headers
    assert call.headed(Head(200, "application/json", session_id="s-2")) == Read(e.max_event_bytes)
    notified = call.received(initialized(replayed["id"]))
    assert sent_message(notified) == {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert type(notified) is Send and notified.kind is AttemptKind.REINITIALISE
    assert ("mcp-session-id", "s-2") in notified.headers
    assert ("mcp-protocol-version", "2025-11-25") in notified.headers
    assert call.headed(Head(202)) == Read(e.max_event_bytes)
    unlock = call.received(b"")
    # The lock goes back, and the call goes again in the new session, under a fresh id.
    assert type(unlock) is Unlock
    resend = unlock.then
    message = sent_message(resend)
    assert message == {**REQUEST, "id": message["id"]} and message["id"] != replayed["id"]
    assert resend == Send(resend.content, AttemptKind.POST, (("mcp-session-id", "s-2"),))
    assert e.sessions.replacement("s-1") == "s-2"
    assert call.headed(JSON) == Read(e.max_event_bytes)
    assert call.received(answer(message["id"])) == Answer(handed_on())
    record = call.ref.current
    assert [(a.kind, a.status, a.decision.reason) for a in record.attempts] == [  # type: ignore[union-attr]
        (AttemptKind.POST, 404, Reason.SESSION_LOST),
        (AttemptKind.REINITIALISE, 200, Reason.SESSION_REINITIALISED),
        (AttemptKind.POST, 200, Reason.SUCCESS),
    ]


def test_a_second_call_that_lost_the_session_resends_in_the_one_renewed_meanwhile() -> None:
    e = engine()
    opened_session(e)
    e.sessions.renewed("s-1", "s-2")  # another call renewed it while this one waited
    call = begin_call(e, request(), {"mcp-session-id": "s-1"}, {}, URL)
    assert call is not None
    call.start()
    call.headed(Head(404, "application/json"))
    assert call.received(b"") == Lock()
    unlock = call.locked()
    assert type(unlock) is Unlock
    assert unlock.then == Send(unlock.then.content, AttemptKind.POST, (("mcp-session-id", "s-2"),))  # type: ignore[union-attr]


def test_a_failed_renewal_unlocks_and_replies_with_the_404_as_the_server_sent_it() -> None:
    e = engine()
    opened_session(e)
    call = begin_call(e, request(), {"mcp-session-id": "s-1"}, {}, URL)
    assert call is not None
    call.start()
    call.headed(Head(404, "application/json"))
    assert call.received(b'{"lost": true}') == Lock()
    call.locked()
    call.headed(Head(500, "text/plain"))
    assert call.received(b"down") == Unlock(Answer(b'{"lost": true}', 404, "application/json"))
    assert call.done
    assert e.sessions.failures("s-1") == 1
    assert call.ref.current.attempts[-1].decision == Decision.stop(Reason.REINITIALISE_FAILED)
