"""What a new call is before its first send (core/opening.py), read only as far as the
decisions need: the server's key only for a breaker or the duplicate guard (which writes a
guarded call in the ledger as it leaves), the re-send detector on every request."""

from __future__ import annotations

import json

from mcp_safe_retry import Idempotency, RetryPolicy, allow_duplicate
from mcp_safe_retry.core.attempt_kinds import ErrorKind
from mcp_safe_retry.core.call import Call
from mcp_safe_retry.core.call import begin as begin_call
from mcp_safe_retry.core.commands import Answer, Refuse, Send
from mcp_safe_retry.core.decision import Reason
from mcp_safe_retry.core.duplicate import LedgerState, Verdict
from mcp_safe_retry.core.engine import Engine
from mcp_safe_retry.core.extensions import IDEMPOTENCY_EXTENSION
from mcp_safe_retry.core.outcomes import Outcome
from mcp_safe_retry.core.records import RetryOrigin
from mcp_safe_retry.core.servers import ServerKey, key_of, server_key
from tests.core.drive import JSON, URL, answer, engine, request


class CountedUrl:
    """A request URL that counts how often it is written out (as ``str(request.url)``)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.written = 0

    def __str__(self) -> str:
        self.written += 1
        return self.url


def _begin(e: Engine, url: object, tool: str = "charge", request_id: int = 7) -> Call:
    call = begin_call(e, request(tool, request_id), {}, {}, url)
    assert call is not None
    return call


def test_a_guarded_call_is_in_the_ledger_from_its_first_send_until_answered() -> None:
    e, url = engine(), CountedUrl(URL)
    call = _begin(e, url)
    assert call.start() == Send(None)
    assert url.written == 1 and len(e.guard.ledger) == 1  # type: ignore[arg-type]
    twin = _begin(e, URL, request_id=8)  # the same call, sent while the first is in flight
    command = twin.start()
    assert type(command) is Refuse and command.outcome is Outcome.DUPLICATE_IN_FLIGHT
    call.headed(JSON)
    call.received(answer(7))
    assert len(e.guard.ledger) == 0  # type: ignore[arg-type]


def test_a_call_that_may_have_run_is_remembered_under_its_server_s_key() -> None:
    e, url = engine(), CountedUrl("HTTP://127.0.0.1:80/mcp?x=1")
    first = _begin(e, url)
    first.start()
    first.failed(ConnectionResetError("reset"), ErrorKind.READ, "reset")
    assert url.written == 1 and len(e.guard.ledger) == 1  # type: ignore[arg-type]
    # The same call to the same server, however its URL is written, is held.
    again = _begin(e, "http://127.0.0.1/mcp", request_id=8)
    command = again.start()
    assert type(command) is Refuse and command.outcome is Outcome.DUPLICATE_HELD
    assert again.ref.current.attempts[0].retry_origin is RetryOrigin.APPLICATION
    # Another server's is not.
    assert _begin(e, "http://127.0.0.1/other", request_id=9).start() == Send(None)


def test_the_consent_is_read_when_the_guard_finds_a_repeat() -> None:
    e = engine()
    first = _begin(e, URL)
    first.start()
    first.failed(ConnectionResetError("reset"), ErrorKind.READ, "reset")
    with allow_duplicate():
        again = _begin(e, URL, request_id=8)
    assert again.start() == Send(None)
    assert again.duplicate is not None
    assert again.books.fixed.duplicate is again.duplicate  # as its record will say


def test_the_resend_detector_sees_every_request() -> None:
    e = engine()
    first = _begin(e, URL, tool="lookup")  # READ: not guarded
    first.start()
    first.failed(ConnectionResetError("reset"), ErrorKind.CONNECT, "refused")
    first.slept()
    first.failed(ConnectionResetError("reset"), ErrorKind.CONNECT, "refused")
    first.slept()
    first.failed(ConnectionResetError("reset"), ErrorKind.CONNECT, "refused")
    assert first.done
    again = _begin(e, URL, tool="lookup", request_id=8)
    assert again.outgoing.origin is RetryOrigin.APPLICATION


def test_a_declared_idempotency_wins_and_an_invalid_one_is_ignored() -> None:
    e = engine()
    for declared, expected in [("read", Idempotency.READ), ("bogus", Idempotency.UNSAFE)]:
        extensions = {IDEMPOTENCY_EXTENSION: declared}
        call = begin_call(e, request("charge"), {}, extensions, URL)
        assert call is not None and call.idempotency is expected


def test_a_declared_idempotency_decides_whether_the_guard_watches_the_call() -> None:
    # "lookup" is READ by the policy, "charge" UNSAFE
    for tool, declared, watched in [("lookup", "unsafe", True), ("charge", "read", False)]:
        e, url = engine(), CountedUrl(URL)
        call = begin_call(e, request(tool), {}, {IDEMPOTENCY_EXTENSION: declared}, url)
        assert call is not None
        call.start()
        call.failed(ConnectionResetError("reset"), ErrorKind.READ, "reset")  # may have run
        assert (url.written, len(e.guard.ledger)) == ((1, 1) if watched else (0, 0))  # type: ignore[arg-type]


def test_the_kind_remembered_follows_the_read_only_tools_seen() -> None:
    e = engine(policy=RetryPolicy(trust_annotations=True, tools={"pay*": "unsafe"}))
    assert e.request_kind("tools/call", "search") == (Idempotency.UNSAFE, True)
    e.observed.read_only_tools = frozenset({"search", "payments"})
    assert e.request_kind("tools/call", "search") == (Idempotency.READ, False)
    assert e.request_kind("tools/call", "payments") == (Idempotency.UNSAFE, True)  # the policy
    assert e.request_kind("tools/list", None) == (Idempotency.READ, False)
    for n in range(1100):
        assert e.request_kind("tools/call", f"t{n}") == (Idempotency.UNSAFE, True)
    assert len(e._kinds) <= 1024


def test_a_server_key_is_worked_out_once_when_read() -> None:
    url = CountedUrl("https://Example.com:443/mcp?x=1")
    key = ServerKey(url, server_key)
    assert url.written == 0
    assert str(key) == "https://example.com/mcp" == str(key)
    assert url.written == 1 and repr(key) == "ServerKey('https://example.com/mcp')"


def test_a_server_key_built_in_c_is_the_same_key() -> None:
    url = CountedUrl("https://Example.com:443/mcp?x=1")
    key = key_of((url, server_key))
    assert isinstance(key, ServerKey) and url.written == 0
    assert str(key) == str(ServerKey("https://example.com/mcp", server_key)) == str(key)
    assert url.written == 1
    assert key != ServerKey(url, server_key)  # equal only to itself, never as a tuple


def test_an_answer_after_the_callers_cancellation_is_joined_by_its_resend() -> None:
    """The SDK's own timeout (2025-11-25): it sends ``notifications/cancelled`` and leaves the
    POST open; the late answer is one its caller never saw, so the re-send is not sent: it
    gets that answer, under its own id, and the tool ran once."""
    e = engine()
    first = _begin(e, URL)
    first.start()
    cancelled = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "timed out"},
    }
    notice = begin_call(e, json.dumps(cancelled).encode(), {}, {}, URL)
    assert notice is not None
    first.headed(JSON)
    first.received(answer(7))  # the late answer: it ran, unseen
    (entry,) = e.guard.ledger.in_doubt(0.0)
    assert entry.call.state is LedgerState.UNSEEN and "answer" not in entry.to_dict()
    again = _begin(e, URL, request_id=8)
    command = again.start()
    assert type(command) is Answer and command.status == 200
    assert json.loads(command.body or b"") == {**json.loads(answer(7)), "id": 8}
    record = again.ref.current
    assert record.outcome == "TOOL_SUCCESS" and record.post_count == 0 and record.complete
    assert record.duplicate_of is not None and record.duplicate_of.verdict is Verdict.JOINED
    assert record.attempts[-1].decision.reason is Reason.DUPLICATE_JOINED  # type: ignore[union-attr]
    assert "joined the same call" in (record.classification.detail or "")  # type: ignore[union-attr]
    # The answer has been seen now: the same call once more is a call of its own.
    assert e.guard.ledger.in_doubt(0.0) == []
    assert _begin(e, URL, request_id=9).start() == Send(None)


def test_a_cancellation_of_another_request_changes_nothing() -> None:
    e = engine()
    first = _begin(e, URL)
    first.start()
    other = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}
    assert begin_call(e, json.dumps(other).encode(), {}, {}, URL) is not None
    first.headed(JSON)
    first.received(answer(7))
    assert _begin(e, URL, request_id=8).start() == Send(None)  # answered and seen: sent
