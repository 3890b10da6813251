"""The circuit breaker through the transports: what is held back, what counts, what closes it.

The inner transport is scripted (it counts the POSTs it sees); time is the breaker's
injected clock, so no test waits. A breaker of this process is asked by the call itself; any
other (here a subclass, as a shared breaker would be) through the ``Ask`` command that the
shell carries out (``allow`` in a sync shell, ``await allow_async`` in an async one); the
tests run both ways, sync and async, httpx and httpx2.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import httpx2
import pytest

from mcp_safe_retry import (
    AsyncRetryTransport,
    CircuitBreaker,
    CircuitOpenError,
    Idempotency,
    RetryBudget,
    RetryPolicy,
    RetryTransport,
    get_record,
    mcp_client,
)
from mcp_safe_retry import httpx2 as mcp_httpx2
from mcp_safe_retry.core.attempt_kinds import AttemptKind
from mcp_safe_retry.core.breaker import CircuitState
from mcp_safe_retry.records import CONTAINED_ERROR_CODE, CallRecord, Outcome, Reason
from tests.helpers import Script, json_reply, ok_result, rpc, sse_reply, status_reply, tool_call

A = "http://a.test/mcp"
B = "http://b.test/mcp"
UNSAFE = tool_call("charge")  # one attempt per call: each failure counts once
READ = rpc("tools/list")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class SharedLike(CircuitBreaker):
    """Not this process's own kind of breaker: the shell is asked to consult it."""

    answers_inline = False  # asked through the shell, as a shared one is


class AskedBudget(RetryBudget):
    """A budget the shells consult through ``Ask`` (as they would a shared one)."""

    answers_inline = False  # asked through the shell, as a shared one is

    def __init__(self, allow: bool) -> None:
        super().__init__()
        self.allow = allow
        self.asked = 0

    def allow_retry(self) -> bool:
        self.asked += 1
        return self.allow

    async def allow_retry_async(self) -> bool:
        return self.allow_retry()


Post = Callable[[str, dict[str, Any]], httpx.Response]


def poster(mode: str, script: Script, **options: Any) -> Post:
    """POST through a transport of ``mode`` ("sync", "async"); the response read whole, or
    the exception raised."""
    options.setdefault("sleep", (lambda _: None) if mode == "sync" else _no_sleep)
    if mode == "sync":
        client = httpx.Client(transport=RetryTransport(script, **options))
        return lambda url, body: client.post(url, json=body)

    transport = AsyncRetryTransport(script, **options)

    def post(url: str, body: dict[str, Any]) -> httpx.Response:
        async def go() -> httpx.Response:
            async with httpx.AsyncClient(transport=transport) as client:
                return await client.post(url, json=body)

        return anyio.run(go)

    return post


async def _no_sleep(_: float) -> None:
    return None


def held(record: CallRecord | None) -> bool:
    """Whether the call ended held back by the breaker, with nothing sent by its last try."""
    assert record is not None and record.classification is not None
    last = record.attempts[-1]
    return (
        record.classification.outcome is Outcome.CIRCUIT_OPEN
        and last.decision is not None
        and last.decision.reason is Reason.CIRCUIT_OPEN
        and last.kind == AttemptKind.HELD
    )


MODES = [
    pytest.param("sync", CircuitBreaker, id="sync-own"),
    pytest.param("sync", SharedLike, id="sync-asked"),
    pytest.param("async", CircuitBreaker, id="async-own"),
    pytest.param("async", SharedLike, id="async-asked"),
]


@pytest.mark.parametrize(("mode", "kind"), MODES)
def test_opens_after_five_transient_failures_then_fails_fast_without_a_post(
    mode: str, kind: type[CircuitBreaker]
) -> None:
    clock = Clock()
    breaker = kind(clock=clock)
    script = Script(status_reply(503))
    post = poster(mode, script, breaker=breaker)
    for i in range(5):
        assert post(A, {**UNSAFE, "id": i}).status_code == 503
    assert breaker.state(server_of(A)) is CircuitState.OPEN
    with pytest.raises(CircuitOpenError, match=r"circuit open for http://a\.test/mcp") as info:
        post(A, {**UNSAFE, "id": 5})
    assert isinstance(info.value, httpx.TransportError)
    assert "next probe in 30.0s" in str(info.value)
    record = get_record(info.value)
    assert held(record)
    assert record is not None and record.post_count == 0
    assert len(script.requests) == 5  # nothing sent for the held call


def server_of(url: str) -> str:
    from mcp_safe_retry.core.breaker import server_key

    return server_key(url)


@pytest.mark.parametrize(("mode", "kind"), MODES)
def test_a_retry_is_held_back_once_the_circuit_opens(mode: str, kind: type[CircuitBreaker]) -> None:
    script = Script(status_reply(503))
    post = poster(mode, script, breaker=kind(clock=Clock()))
    first = get_record(post(A, {**READ, "id": 1}))
    assert first is not None and first.post_count == 3  # 3 failures counted
    with pytest.raises(CircuitOpenError) as info:
        post(A, {**READ, "id": 2})  # failures 4 and 5 open it: the 2nd retry is never sent
    record = get_record(info.value)
    assert held(record)
    assert record is not None and record.post_count == 2 and len(record.attempts) == 3
    assert len(script.requests) == 5


@pytest.mark.parametrize(("mode", "kind"), MODES)
def test_half_open_probe_and_a_success_closes_it(mode: str, kind: type[CircuitBreaker]) -> None:
    clock = Clock()
    breaker = kind(clock=clock, open_for=10)
    script = Script(*[status_reply(503)] * 5, json_reply(body=ok_result))
    post = poster(mode, script, breaker=breaker)
    for i in range(5):
        post(A, {**UNSAFE, "id": i})
    with pytest.raises(CircuitOpenError):
        post(A, {**UNSAFE, "id": 5})
    clock.now += 10  # open_for is over: one probe may go
    assert breaker.state(server_of(A)) is CircuitState.HALF_OPEN
    probe = post(A, {**UNSAFE, "id": 6})
    assert probe.status_code == 200
    assert breaker.state(server_of(A)) is CircuitState.CLOSED
    assert post(A, {**UNSAFE, "id": 7}).status_code == 200
    assert len(script.requests) == 7


@pytest.mark.parametrize(("mode", "kind"), MODES)
def test_a_failed_probe_opens_it_again(mode: str, kind: type[CircuitBreaker]) -> None:
    clock = Clock()
    breaker = kind(clock=clock, open_for=10)
    script = Script(status_reply(503))
    post = poster(mode, script, breaker=breaker)
    for i in range(5):
        post(A, {**UNSAFE, "id": i})
    clock.now += 10
    assert post(A, {**UNSAFE, "id": 6}).status_code == 503  # the probe, sent and failed
    with pytest.raises(CircuitOpenError):
        post(A, {**UNSAFE, "id": 7})
    assert len(script.requests) == 6


@pytest.mark.parametrize(("mode", "kind"), MODES)
def test_circuits_are_kept_per_server(mode: str, kind: type[CircuitBreaker]) -> None:
    script = Script(status_reply(503))
    post = poster(mode, script, breaker=kind(clock=Clock()))
    for i in range(5):
        post(A, {**UNSAFE, "id": i})
    with pytest.raises(CircuitOpenError):
        post(A, {**UNSAFE, "id": 5})
    assert post(B, {**UNSAFE, "id": 6}).status_code == 503  # another server: still sent
    with pytest.raises(CircuitOpenError):  # the same server, whatever the query
        post(A + "?session=x", {**UNSAFE, "id": 7})
    assert len(script.requests) == 6


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(json_reply(body=lambda i: ok_result(i, is_error=True)), id="tool-error"),
        pytest.param(
            json_reply(
                body=lambda i: {
                    "jsonrpc": "2.0",
                    "id": i,
                    "error": {"code": -32602, "message": "x"},
                }
            ),
            id="jsonrpc-error",
        ),
        pytest.param(json_reply(body=b"{not json"), id="invalid-answer"),
        pytest.param(status_reply(404), id="http-404"),
    ],
)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_answers_of_a_working_server_never_open_it(mode: str, answer: Any) -> None:
    breaker = CircuitBreaker(clock=Clock())
    script = Script(answer)
    post = poster(mode, script, breaker=breaker)
    for i in range(12):  # twelve charges (an invalid answer may have run: the same is held)
        post(A, tool_call("charge", i, n=i))
    assert breaker.state(server_of(A)) is CircuitState.CLOSED
    assert len(script.requests) == 12


@pytest.mark.parametrize(("mode", "kind"), MODES)
def test_a_retry_after_keeps_it_open_longer(mode: str, kind: type[CircuitBreaker]) -> None:
    clock = Clock()
    breaker = kind(clock=clock, open_for=10)
    script = Script(status_reply(503, retry_after="120"))
    post = poster(mode, script, breaker=breaker)
    for i in range(5):
        post(A, {**UNSAFE, "id": i})
    clock.now += 60  # past open_for, not past the server's Retry-After
    with pytest.raises(CircuitOpenError):
        post(A, {**UNSAFE, "id": 5})
    clock.now += 61
    assert post(A, {**UNSAFE, "id": 6}).status_code == 503  # the probe goes
    assert len(script.requests) == 6


@pytest.mark.parametrize(("mode", "kind"), MODES)
def test_contained_a_held_call_answers_the_jsonrpc_error(
    mode: str, kind: type[CircuitBreaker]
) -> None:
    script = Script(httpx.ConnectError("refused"))
    post = poster(mode, script, breaker=kind(clock=Clock()), contain_failures=True)
    for i in range(2):  # connect errors are retried (nothing was sent): 3, then 2 and held
        post(A, {**UNSAFE, "id": i})
    response = post(A, {**UNSAFE, "id": 9})
    body = json.loads(response.content)
    assert response.status_code == 200
    assert body["id"] == 9
    assert body["error"]["code"] == CONTAINED_ERROR_CODE
    assert body["error"]["data"]["outcome"] == "CIRCUIT_OPEN"
    assert body["error"]["data"]["reason"] == "circuit_open"
    record = get_record(response)
    assert held(record)
    assert record is not None and record.post_count == 0
    assert len(script.requests) == 5


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_notifications_pass_an_open_circuit(mode: str) -> None:
    breaker = CircuitBreaker(clock=Clock())
    script = Script(status_reply(503))
    post = poster(mode, script, breaker=breaker)
    for i in range(5):
        post(A, {**UNSAFE, "id": i})
    note = rpc("notifications/cancelled", id=None, requestId=1)
    assert post(A, note).status_code == 503  # no id: no call to hold back
    assert len(script.requests) == 6


@pytest.mark.parametrize("allow", [True, False])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_budget_of_the_shells_is_consulted_last(mode: str, allow: bool) -> None:
    budget = AskedBudget(allow)
    script = Script(status_reply(503), json_reply(body=ok_result))
    post = poster(mode, script, budget=budget)
    response = post(A, {**READ, "id": 1})
    record = get_record(response)
    assert record is not None and budget.asked == 1
    if allow:
        assert response.status_code == 200 and record.post_count == 2
    else:  # throttled: the 503 itself is handed on, whole
        assert response.status_code == 503 and record.post_count == 1
        assert record.attempts[-1].decision is not None
        assert record.attempts[-1].decision.reason is Reason.THROTTLED
    assert all(stream.closed for stream in script.streams[:-1])


def test_one_breaker_serves_several_transports_and_mcp_client_passes_it() -> None:
    breaker = CircuitBreaker(clock=Clock())
    script = Script(status_reply(503))
    first = poster("sync", script, breaker=breaker)
    for i in range(5):
        first(A, {**UNSAFE, "id": i})
    second = poster("async", script, breaker=breaker)
    with pytest.raises(CircuitOpenError):
        second(A, {**UNSAFE, "id": 5})

    async def through_mcp_client() -> httpx.Response:
        async with mcp_client(transport=script, breaker=breaker) as client:
            return await client.post(A, json={**UNSAFE, "id": 6})

    contained = anyio.run(through_mcp_client)  # mcp_client contains failures by default
    assert held(get_record(contained))
    assert json.loads(contained.content)["error"]["code"] == CONTAINED_ERROR_CODE
    assert len(script.requests) == 5


def test_httpx2_raises_its_own_circuit_open_error() -> None:
    breaker = CircuitBreaker(clock=Clock())

    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("refused")

    transport = mcp_httpx2.RetryTransport(
        httpx2.MockTransport(refuse), breaker=breaker, sleep=lambda _: None
    )
    client = httpx2.Client(transport=transport)
    with pytest.raises(httpx2.ConnectError):
        client.post(A, json={**UNSAFE, "id": 1})  # 3 failures: 2 short of opening it
    with pytest.raises(CircuitOpenError) as info:  # the one class catches both flavours
        client.post(A, json={**UNSAFE, "id": 2})  # 2 more open it: its 3rd try is held
    assert isinstance(info.value, httpx2.TransportError)
    assert not isinstance(info.value, httpx.TransportError)
    assert held(get_record(info.value))


def test_the_policy_is_untouched_by_the_breaker() -> None:
    """A breaker changes what is sent, never what the policy decides on an answer."""
    script = Script(status_reply(503), json_reply(body=ok_result))
    post = poster("sync", script, breaker=CircuitBreaker(clock=Clock()), policy=RetryPolicy())
    record = get_record(post(A, {**READ, "id": 1}))
    assert record is not None and record.post_count == 2


@pytest.mark.parametrize("contain", [False, True])
@pytest.mark.parametrize(("mode", "kind"), MODES)
def test_a_broken_stream_whose_reissue_is_held_back(
    mode: str, kind: type[CircuitBreaker], contain: bool
) -> None:
    script = Script(sse_reply(lambda i: [b": ping\n\n"], fail=httpx.ReadError("cut")))
    breaker = kind(clock=Clock(), failure_threshold=1)  # the broken stream opens it
    post = poster(mode, script, breaker=breaker, contain_failures=contain)
    if not contain:
        with pytest.raises(CircuitOpenError) as info:
            post(A, {**READ, "id": 1})
        record = get_record(info.value)
    else:
        response = post(A, {**READ, "id": 1})
        event = response.content.decode().split("data: ", 1)[1]
        assert json.loads(event)["error"]["data"]["outcome"] == "CIRCUIT_OPEN"
        record = get_record(response)
    assert held(record)
    assert record is not None and record.post_count == 1
    assert len(script.requests) == 1


class Stalled(CircuitBreaker):
    """A breaker (or budget) whose answer never comes: the caller gives up waiting."""

    answers_inline = False  # asked through the shell, as a shared one is

    async def allow_async(self, key: str) -> bool:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


class StalledBudget(RetryBudget):
    answers_inline = False  # asked through the shell, as a shared one is

    async def allow_retry_async(self) -> bool:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


@pytest.mark.anyio
@pytest.mark.parametrize("stalled", ["breaker", "budget"])
async def test_a_call_cancelled_while_the_shell_asks_still_gets_a_record(stalled: str) -> None:
    script = Script(status_reply(503))
    options: dict[str, Any] = (
        {"breaker": Stalled()} if stalled == "breaker" else {"budget": StalledBudget()}
    )
    transport = AsyncRetryTransport(script, sleep=_no_sleep, **options)
    async with httpx.AsyncClient(transport=transport) as client:
        with anyio.move_on_after(0.05):
            await client.post(A, json={**READ, "id": 1})
    record = transport.history.last()
    assert record is not None and record.complete
    last = record.attempts[-1]
    assert last.decision is not None and last.decision.reason is Reason.ABANDONED
    if stalled == "breaker":  # held before its first send: nothing was sent
        assert record.post_count == 0 and last.kind == AttemptKind.HELD
    else:  # the 503 came; the retry waited for the budget and was never sent
        assert record.post_count == 1 and len(script.requests) == 1


@pytest.mark.anyio
async def test_async_shells_await_the_breaker(anyio_backend: str) -> None:
    clock = Clock()
    breaker = SharedLike(clock=clock, failure_threshold=2)
    script = Script(status_reply(503))
    transport = AsyncRetryTransport(script, sleep=_no_sleep, breaker=breaker)
    async with httpx.AsyncClient(transport=transport) as client:
        for i in range(2):
            await client.post(A, json={**UNSAFE, "id": i})
        with pytest.raises(CircuitOpenError):
            await client.post(A, json={**UNSAFE, "id": 2})
    assert len(script.requests) == 2


@pytest.mark.parametrize("allow", [True, False])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_broken_stream_asks_a_budget_of_the_shells_before_its_reissue(
    mode: str, allow: bool
) -> None:
    budget = AskedBudget(allow)
    broken = sse_reply(lambda i: [b": ping\n\n"], fail=httpx.ReadError("cut"))
    script = Script(broken, json_reply(body=ok_result))
    post = poster(mode, script, budget=budget)
    if allow:  # re-issued, and its answer spliced into the stream the caller reads
        response = post(A, {**READ, "id": 7})
        event = json.loads(response.content.decode().split("data: ", 1)[1])
        assert event["id"] == 7 and "result" in event
        record = get_record(response)
        assert record is not None and record.post_count == 2
    else:  # throttled: the stream ends broken, as it would with no retry left
        with pytest.raises(httpx.ReadError) as info:
            post(A, {**READ, "id": 7})
        record = get_record(info.value)
        assert record is not None and record.post_count == 1
        assert record.attempts[-1].decision is not None
        assert record.attempts[-1].decision.reason is Reason.THROTTLED
    assert budget.asked == 1


@pytest.mark.parametrize(("mode", "kind"), MODES)
def test_an_answer_held_when_the_breaker_refuses_an_immediate_retry_is_closed(
    mode: str, kind: type[CircuitBreaker]
) -> None:
    # No backoff: the retry is asked of the breaker right after the 503 was read, and that
    # 503 (not handed on: the call ends held back) must still be closed: by the whole read
    # of its body, and by the shell, which closes every answer it does not hand on.
    breaker = kind(failure_threshold=1, clock=Clock())
    script = Script(status_reply(503))
    policy = RetryPolicy(initial_backoff=0.0, tools={"lookup": Idempotency.READ})
    post = poster(mode, script, breaker=breaker, policy=policy)
    with pytest.raises(CircuitOpenError) as info:
        post(A, {**tool_call("lookup"), "id": 1})
    record = get_record(info.value)
    assert held(record)
    assert record is not None and record.post_count == 1
    assert [stream.closed for stream in script.streams] == [True]
