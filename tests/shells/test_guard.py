"""The duplicate guard through the transports: a re-send of an UNSAFE tool call that may
have run is not sent; every other call goes as it always did.

The inner transport is an ``httpx.MockTransport`` / ``httpx2.MockTransport`` whose handler
plays a server (it counts the POSTs it sees) and, for a dropped connection, raises the
library's ``ReadError`` or ``RemoteProtocolError`` once it has the whole request: the
request was sent, no answer came back. Every case runs sync and async, httpx and httpx2.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mcp_safe_retry
from mcp_safe_retry import (
    CallLedger,
    CircuitBreaker,
    DuplicateCallError,
    Idempotency,
    RetryBudget,
    RetryPolicy,
    allow_duplicate,
    get_record,
)
from mcp_safe_retry import httpx2 as mcp_httpx2
from mcp_safe_retry.core.attempt_kinds import AttemptKind
from mcp_safe_retry.extensions import ALLOW_DUPLICATE_EXTENSION, CALLER_EXTENSION
from mcp_safe_retry.records import (
    CONTAINED_ERROR_CODE,
    CallRecord,
    Delivery,
    Outcome,
    Reason,
    RetryOrigin,
)

A = "http://a.test/mcp"
B = "http://b.test/mcp"

LIBRARIES = {"httpx": (httpx, mcp_safe_retry), "httpx2": (httpx2, mcp_httpx2)}
FLAVOURS = [
    pytest.param(lib, mode, id=f"{mode}-{lib}")
    for lib in ("httpx", "httpx2")
    for mode in ("sync", "async")
]

Step = str | int  # a name below, or a bare HTTP status


def charge(id: int, **arguments: Any) -> dict[str, Any]:
    arguments = arguments or {"key": "k", "amount": 5}
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": "charge", "arguments": arguments},
    }


class Server:
    """Answers the POSTs by ``steps`` in order (the last repeats) and counts them.

    Steps: "ok", "tool_error", "rpc_error", "cut" (an SSE answer that ends before the
    response), "read" / "protocol" / "timeout" (the connection fails once the request is
    sent), "connect" (no connection: nothing sent), or an HTTP status with an empty body.
    """

    def __init__(self, lib: str, *steps: Step) -> None:
        self.lib = LIBRARIES[lib][0]
        self.steps = steps
        self.bodies: list[dict[str, Any]] = []
        self.calls = 0

    @property
    def posts(self) -> int:
        return len(self.bodies)

    def handler(self, request: Any) -> Any:
        lib = self.lib
        step = self.steps[min(self.calls, len(self.steps) - 1)]
        self.calls += 1
        if step == "connect":  # refused before a byte left: not a POST the server saw
            raise lib.ConnectError("connection refused", request=request)
        body = json.loads(request.content)
        self.bodies.append(body)
        id = body.get("id")
        if step == "read":
            raise lib.ReadError("connection reset by peer", request=request)
        if step == "protocol":
            raise lib.RemoteProtocolError("Server disconnected without sending a response.")
        if step == "timeout":
            raise lib.ReadTimeout("timed out", request=request)
        if isinstance(step, int):
            return lib.Response(step)
        if step == "cut":
            note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}
            event = f"event: message\ndata: {json.dumps(note)}\n\n".encode()
            return lib.Response(200, headers={"content-type": "text/event-stream"}, content=event)
        answer: dict[str, Any]
        if step == "rpc_error":
            answer = {"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "bad"}}
        else:
            result = {"content": [{"type": "text", "text": "done"}]}
            answer = {"jsonrpc": "2.0", "id": id, "result": result}
            if step == "tool_error":
                result["isError"] = True
        return lib.Response(200, json=answer)


class Client:
    """POSTs through one retry transport of ``lib`` and ``mode``: the response (read whole)
    or the exception the call ended with."""

    def __init__(self, lib: str, mode: str, server: Server, **options: Any) -> None:
        http, package = LIBRARIES[lib]
        self.http = http
        inner = http.MockTransport(server.handler)
        if mode == "sync":
            options.setdefault("sleep", lambda _: None)
            self.transport = package.RetryTransport(inner, **options)
        else:
            options.setdefault("sleep", _no_sleep)
            self.transport = package.AsyncRetryTransport(inner, **options)
        self.mode = mode

    def post(self, body: dict[str, Any], url: str = A, **kwargs: Any) -> Any:
        if self.mode == "sync":
            with self.http.Client(transport=self.transport) as client:
                return client.post(url, json=body, **kwargs)

        async def go() -> Any:
            async with self.http.AsyncClient(transport=self.transport) as client:
                return await client.post(url, json=body, **kwargs)

        return anyio.run(go)

    def outcome(self, body: dict[str, Any], url: str = A, **kwargs: Any) -> CallRecord:
        """The record of the call, whether it answered or raised a transport error."""
        try:
            response = self.post(body, url, **kwargs)
        except self.http.TransportError as exc:
            record = get_record(exc)
        else:
            record = get_record(response)
        assert record is not None
        return record


async def _no_sleep(_: float) -> None:
    return None


def was_held(record: CallRecord) -> bool:
    """The call ended held by the guard: one HELD attempt, nothing sent, re-sent by the
    application, the earlier call named."""
    (attempt,) = record.attempts
    assert attempt.decision is not None
    return (
        record.outcome == Outcome.DUPLICATE_HELD
        and record.post_count == 0
        and attempt.kind == AttemptKind.HELD
        and attempt.decision.reason is Reason.DUPLICATE_HELD
        and attempt.retry_origin is RetryOrigin.APPLICATION
        and attempt.delivery is Delivery.NOT_SENT
        and record.duplicate_of is not None
    )


# -- done when: a dropped connection after sending holds the re-send --------------------


@pytest.mark.parametrize("drop", ["read", "protocol"])
@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_a_resend_after_a_dropped_connection_is_not_sent(lib: str, mode: str, drop: str) -> None:
    server = Server(lib, drop, "ok")
    client = Client(lib, mode, server)
    with pytest.raises(client.http.TransportError) as first:
        client.post(charge(1))
    assert not isinstance(first.value, DuplicateCallError)  # the drop itself
    with pytest.raises(DuplicateCallError) as second:  # one class for both flavours
        client.post(charge(2))
    assert isinstance(second.value, client.http.TransportError)
    assert server.posts == 1  # 0 further POSTs
    message = str(second.value)
    assert "tools/call charge not sent" in message
    assert "request id 1" in message and "delivery may_have_run" in message
    assert "ended NETWORK_ERROR" in message and "allow_duplicate()" in message
    record = get_record(second.value)
    assert record is not None and was_held(record)
    earlier = record.to_dict()["duplicateOf"]
    assert earlier["requestId"] == 1 and earlier["delivery"] == "may_have_run"
    assert earlier["outcome"] == "NETWORK_ERROR" and earlier["verdict"] == "held"
    assert earlier["errorKind"] == ("read" if drop == "read" else "protocol")
    # The first call's own record says its request may have run.
    first_record = get_record(first.value)
    assert first_record is not None
    assert [a["delivery"] for a in first_record.to_dict()["attempts"]] == ["may_have_run"]


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_contained_the_held_call_is_a_jsonrpc_error_that_says_why(lib: str, mode: str) -> None:
    server = Server(lib, "protocol", "ok")
    client = Client(lib, mode, server, contain_failures=True)
    first = client.post(charge(1))
    assert first.json()["error"]["data"]["outcome"] == "NETWORK_ERROR"
    second = client.post(charge(2))
    assert second.status_code == 200 and server.posts == 1
    error = second.json()["error"]
    assert second.json()["id"] == 2 and error["code"] == CONTAINED_ERROR_CODE
    assert "DUPLICATE_HELD" in error["message"] and "not sent" in error["message"]
    data = error["data"]
    assert data["outcome"] == "DUPLICATE_HELD" and data["reason"] == "duplicate_held"
    assert data["attempts"] == [
        {
            "number": 1,
            "outcome": "DUPLICATE_HELD",
            "httpStatus": None,
            "errorKind": "duplicate_held",
            "reason": "duplicate_held",
            "delivery": "not_sent",
        }
    ]
    assert data["duplicateOf"]["requestId"] == 1
    assert data["duplicateOf"]["delivery"] == "may_have_run"
    assert data["duplicateOf"]["outcome"] == "NETWORK_ERROR"
    record = get_record(second)
    assert record is not None and was_held(record)


# -- what goes through as today -----------------------------------------------------------


@pytest.mark.parametrize(
    "first",
    [
        pytest.param("ok", id="success"),
        pytest.param("tool_error", id="tool-error"),
        pytest.param("rpc_error", id="jsonrpc-error"),
        pytest.param(503, id="503"),
        pytest.param(429, id="429"),
        pytest.param(404, id="404"),
        pytest.param("connect", id="connect-error"),
    ],
)
@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_a_resend_after_an_answer_or_an_unsent_request_goes(
    lib: str, mode: str, first: Step
) -> None:
    server = Server(lib, first, "ok")
    client = Client(lib, mode, server, policy=RetryPolicy(max_retries=0))
    client.outcome(charge(1))
    sent_before = server.posts
    record = client.outcome(charge(2))
    assert server.posts == sent_before + 1
    assert record.outcome == Outcome.TOOL_SUCCESS and record.duplicate_of is None


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_other_arguments_another_server_and_read_tools_are_never_held(lib: str, mode: str) -> None:
    server = Server(lib, "read", "ok")
    policy = RetryPolicy(tools={"lookup": Idempotency.READ}, max_retries=0)
    client = Client(lib, mode, server, policy=policy)
    client.outcome(charge(1))
    assert client.outcome(charge(2, key="k", amount=6)).outcome == Outcome.TOOL_SUCCESS
    assert client.outcome(charge(3), url=B).outcome == Outcome.TOOL_SUCCESS
    lookup = {**charge(4), "params": {"name": "lookup", "arguments": {"key": "k"}}}
    server.steps, server.calls = ("read", "ok"), 0
    server.bodies.clear()
    client.outcome(lookup)  # a READ tool that may have run...
    assert client.outcome({**lookup, "id": 5}).outcome == Outcome.TOOL_SUCCESS  # ...goes again
    assert server.posts == 2
    declared = client.outcome(charge(6), extensions={"mcp_safe_retry.idempotency": "read"})
    assert declared.outcome == Outcome.TOOL_SUCCESS  # declared READ for this request


@pytest.mark.parametrize(
    ("first", "held"),
    [
        pytest.param("timeout", True, id="read-timeout"),
        pytest.param("cut", True, id="stream-cut"),
        pytest.param(500, True, id="500"),
        pytest.param(502, True, id="502"),
        pytest.param(504, True, id="504"),
        pytest.param(501, False, id="501"),
        pytest.param(400, False, id="400"),
        pytest.param(202, False, id="202-http-sse"),
    ],
)
@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_what_may_have_run_by_the_delivery_table(
    lib: str, mode: str, first: Step, held: bool
) -> None:
    server = Server(lib, first, "ok")
    client = Client(lib, mode, server)
    earlier = client.outcome(charge(1))
    expected = Delivery.MAY_HAVE_RUN if held else Delivery.ANSWERED
    assert earlier.attempts[-1].delivery is expected
    record = client.outcome(charge(2))
    assert was_held(record) if held else record.outcome == Outcome.TOOL_SUCCESS
    assert server.posts == (1 if held else 2)


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_the_http_sse_transports_202_is_never_held(lib: str, mode: str) -> None:
    # The HTTP+SSE transport (2024-11-05) answers every POST 202 and sends the response on
    # its event stream, where the SDK waits for it (it reads only the POST's status). Held,
    # the same call made twice would get its error in a body nobody reads: a hang.
    server = Server(lib, 202)
    client = Client(lib, mode, server, contain_failures=True)
    for id in (1, 2, 3):
        response = client.post(charge(id))
        assert response.status_code == 202  # handed on as the server sent it
        record = get_record(response)
        assert record is not None and record.duplicate_of is None
        assert record.attempts[-1].delivery is Delivery.ANSWERED
    assert server.posts == 3


# -- consent and the end of a hold ----------------------------------------------------------


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_consent_per_request_sends_it_and_an_answer_ends_the_hold(lib: str, mode: str) -> None:
    server = Server(lib, "read", "ok")
    client = Client(lib, mode, server)
    client.outcome(charge(1))
    assert was_held(client.outcome(charge(2)))
    record = client.outcome(charge(3), extensions={ALLOW_DUPLICATE_EXTENSION: True})
    assert record.outcome == Outcome.TOOL_SUCCESS and server.posts == 2
    assert record.duplicate_of is not None and record.duplicate_of.verdict == "allowed"
    assert record.retry_origin is RetryOrigin.APPLICATION
    # Answered: the hold is over, the same call goes as any other.
    again = client.outcome(charge(4))
    assert again.outcome == Outcome.TOOL_SUCCESS and again.duplicate_of is None
    assert server.posts == 3


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_consent_by_context_manager(lib: str, mode: str) -> None:
    server = Server(lib, "read", "read", "ok")
    client = Client(lib, mode, server)
    client.outcome(charge(1))
    with allow_duplicate():
        record = client.outcome(charge(2))  # sent, and dropped again: it may have run
    assert record.outcome == Outcome.NETWORK_ERROR and server.posts == 2
    assert record.duplicate_of is not None and record.duplicate_of.verdict == "allowed"
    held = client.outcome(charge(3))
    assert was_held(held) and server.posts == 2
    assert held.duplicate_of is not None and held.duplicate_of.earlier.request_id == 2


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_label_sends_and_names_the_earlier_call(lib: str, mode: str) -> None:
    server = Server(lib, "read", "ok")
    client = Client(lib, mode, server, policy=RetryPolicy(duplicate_guard="label"))
    client.outcome(charge(1))
    record = client.outcome(charge(2))
    assert record.outcome == Outcome.TOOL_SUCCESS and server.posts == 2
    assert record.duplicate_of is not None
    assert record.to_dict()["duplicateOf"]["verdict"] == "labelled"
    assert record.retry_origin is RetryOrigin.APPLICATION


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_off_remembers_nothing(lib: str, mode: str) -> None:
    server = Server(lib, "read", "ok")
    client = Client(lib, mode, server, policy=RetryPolicy(duplicate_guard="off"))
    client.outcome(charge(1))
    assert len(client.transport.engine.guard.ledger) == 0  # type: ignore[arg-type]
    record = client.outcome(charge(2))
    assert record.outcome == Outcome.TOOL_SUCCESS and record.duplicate_of is None


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_the_hold_ends_with_the_window(lib: str, mode: str) -> None:
    clock = Clock()
    server = Server(lib, "read", "ok")
    policy = RetryPolicy(duplicate_window=60.0)
    client = Client(lib, mode, server, policy=policy, clock=clock)
    client.outcome(charge(1))
    clock.now += 59.0
    assert was_held(client.outcome(charge(2)))
    clock.now += 2.0
    assert client.outcome(charge(3)).outcome == Outcome.TOOL_SUCCESS
    assert server.posts == 2


# -- with the breaker, the budget, a session, another transport --------------------------


class AskedBreaker(CircuitBreaker):
    """A breaker the shells ask through ``Ask`` (as they would a shared one): counted."""

    answers_inline = False  # asked through the shell, as a shared one is

    asked = 0

    def allow(self, key: str) -> bool:
        self.asked += 1
        return super().allow(key)

    async def allow_async(self, key: str) -> bool:
        return self.allow(key)


class AskedBudget(RetryBudget):
    """A budget the shells ask through ``Ask`` (as they would a shared one): counted."""

    answers_inline = False  # asked through the shell, as a shared one is

    asked = 0

    def allow_retry(self) -> bool:
        self.asked += 1
        return super().allow_retry()

    async def allow_retry_async(self) -> bool:
        return self.allow_retry()


@pytest.mark.parametrize("shared", [False, True], ids=["own", "asked"])
@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_with_the_breaker_and_the_budget(lib: str, mode: str, shared: bool) -> None:
    clock = Clock()
    kind, budget_kind = (AskedBreaker, AskedBudget) if shared else (CircuitBreaker, RetryBudget)
    breaker = kind(clock=clock, failure_threshold=2)
    budget = budget_kind()
    server = Server(lib, "read", "ok")
    client = Client(lib, mode, server, breaker=breaker, budget=budget)
    client.outcome(charge(1))
    tokens, asked = budget.tokens, getattr(breaker, "asked", 0)
    for id in (2, 3, 4):  # held: never a failure the breaker counts, never a token spent
        assert was_held(client.outcome(charge(id)))
    assert breaker.state(breaker_key()) == "closed" and budget.tokens == tokens
    assert getattr(breaker, "asked", 0) == asked  # held before the breaker is asked
    assert getattr(budget, "asked", 0) == 0
    # A call the open breaker holds was not sent either: the earlier call still holds.
    breaker.record(breaker_key(), failed=True)
    breaker.record(breaker_key(), failed=True)
    refused = client.outcome(charge(5), extensions={ALLOW_DUPLICATE_EXTENSION: True})
    assert refused.outcome == Outcome.CIRCUIT_OPEN
    assert refused.attempts[-1].delivery is Delivery.NOT_SENT
    assert was_held(client.outcome(charge(6)))
    assert server.posts == 1


def breaker_key() -> str:
    from mcp_safe_retry.core.breaker import server_key

    return server_key(A)


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_a_resend_in_another_session_is_the_same_call(lib: str, mode: str) -> None:
    """The session is not part of the match: renewed by the transport, or opened anew by a
    client after a teardown, it is the same charge on the same server."""
    server = Server(lib, "read", "ok")
    client = Client(lib, mode, server)
    client.outcome(charge(1), headers={"mcp-session-id": "s1"})
    record = client.outcome(charge(2), headers={"mcp-session-id": "s2"})
    assert was_held(record) and server.posts == 1


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_each_caller_of_one_transport_is_guarded_apart(lib: str, mode: str) -> None:
    """A transport that sends for many callers (the gateway) names each with the caller
    extension: one caller's re-send is held, another caller's same call goes."""
    server = Server(lib, "read", "ok")
    client = Client(lib, mode, server)
    alice, bob = {CALLER_EXTENSION: "alice-digest"}, {CALLER_EXTENSION: "bob-digest"}
    client.outcome(charge(1), extensions=alice)
    assert was_held(client.outcome(charge(2), extensions=alice))
    assert server.posts == 1
    assert client.outcome(charge(3), extensions=bob).outcome == Outcome.TOOL_SUCCESS
    assert client.outcome(charge(4)).outcome == Outcome.TOOL_SUCCESS  # no caller: its own
    assert server.posts == 3


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_the_transports_of_a_process_share_its_ledger_and_one_of_their_own_isolates(
    lib: str, mode: str
) -> None:
    server = Server(lib, "read", "ok", "ok")
    Client(lib, mode, server).outcome(charge(1))
    other = Client(lib, mode, server)  # another client of the process: the same ledger
    assert was_held(other.outcome(charge(2))) and server.posts == 1
    apart = Client(lib, mode, server, ledger=CallLedger())
    assert apart.outcome(charge(3)).outcome == Outcome.TOOL_SUCCESS
    assert server.posts == 2


def test_a_hedging_transport_still_holds_an_unsafe_resend() -> None:
    server = Server("httpx2", "read", "ok")
    client = Client("httpx2", "async", server, policy=RetryPolicy(hedge_after=0.5))
    client.outcome(charge(1))
    assert was_held(client.outcome(charge(2))) and server.posts == 1


def test_a_call_cancelled_in_flight_may_have_run() -> None:
    """An application's own timeout around an UNSAFE call: the POST was in flight, so the
    re-send is held."""

    async def slow(request: httpx.Request) -> httpx.Response:
        await anyio.sleep(10)
        raise AssertionError("not reached")

    sent: list[Any] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        if len(sent) == 1:
            return await slow(request)
        body = json.loads(request.content)
        result = {"content": []}
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": result})

    transport = mcp_safe_retry.AsyncRetryTransport(httpx.MockTransport(handler))

    async def go() -> CallRecord | None:
        async with httpx.AsyncClient(transport=transport) as client:
            with anyio.move_on_after(0.05):
                await client.post(A, json=charge(1))
            with pytest.raises(mcp_safe_retry.DuplicateCallError) as held:
                await client.post(A, json=charge(2))
            return get_record(held.value)

    record = anyio.run(go)
    assert record is not None and was_held(record) and len(sent) == 1
    assert record.duplicate_of is not None
    assert record.duplicate_of.earlier.error_kind == "cancelled"


def test_one_duplicate_error_catches_every_flavour() -> None:
    from mcp_safe_retry.shells.errors_httpx import DuplicateCallError as ForHttpx
    from mcp_safe_retry.shells.generated.errors_httpx2 import DuplicateCallError as ForHttpx2

    assert issubclass(ForHttpx, mcp_safe_retry.DuplicateCallError)
    assert issubclass(ForHttpx2, mcp_safe_retry.DuplicateCallError)
    assert issubclass(ForHttpx, httpx.TransportError)
    assert issubclass(ForHttpx2, httpx2.TransportError)


MAY_RUN = {"read", "protocol", "timeout", "cut", 500, 502}
ANSWERS = {"ok", "tool_error", "rpc_error", 503, 429, 400}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b"]),
            st.sampled_from(sorted(MAY_RUN | ANSWERS | {"connect"}, key=str)),
            st.booleans(),
        ),
        max_size=12,
    )
)
def test_a_call_is_held_exactly_while_its_last_sent_attempt_may_have_run(
    calls: list[tuple[str, Step, bool]],
) -> None:
    """A model of the guard: per arguments, whether the newest sent call may have run."""
    server = Server("httpx", "ok")
    policy = RetryPolicy(max_retries=0)
    client = Client("httpx", "sync", server, policy=policy, ledger=CallLedger())
    may_have_run: dict[str, bool] = {}
    for id, (key, step, consent) in enumerate(calls):
        server.steps, server.calls = (step,), 0
        before = server.posts
        extensions = {ALLOW_DUPLICATE_EXTENSION: True} if consent else {}
        record = client.outcome(charge(id, key=key), extensions=extensions)
        if may_have_run.get(key) and not consent:
            assert was_held(record) and server.posts == before
            continue
        sent = step != "connect"
        assert server.posts == before + (1 if sent else 0)
        assert record.outcome != Outcome.DUPLICATE_HELD
        if sent:
            may_have_run[key] = step in MAY_RUN


# -- idempotent writes: retried like reads, never held ------------------------------------


@pytest.mark.parametrize(("lib", "mode"), FLAVOURS)
def test_an_idempotent_write_is_retried_after_a_drop_and_never_held(lib: str, mode: str) -> None:
    policy = RetryPolicy(tools={"charge": Idempotency.IDEMPOTENT}, max_retries=1)
    server = Server(lib, "read", "ok")
    client = Client(lib, mode, server, policy=policy)
    record = client.outcome(charge(1))
    assert record.outcome == Outcome.TOOL_SUCCESS and record.post_count == 2
    assert str(record.idempotency) == "idempotent"
    assert [a.decision.reason for a in record.attempts if a.decision] == [
        Reason.NETWORK_ERROR,
        Reason.SUCCESS,
    ]
    dropped = Server(lib, "read")  # every POST dropped: the retries are spent...
    client = Client(lib, mode, dropped, policy=policy)
    with pytest.raises(client.http.TransportError):
        client.post(charge(1))
    again = client.outcome(charge(2))  # ...and the same call again is sent, not held
    assert again.outcome == Outcome.NETWORK_ERROR and again.duplicate_of is None
    assert dropped.posts == 4
