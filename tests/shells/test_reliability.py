"""Failure containment, the retry budget, cancellation, leaks and concurrency."""

from __future__ import annotations

import json
import random
from typing import Any

import anyio
import httpx
import pytest

from mcp_safe_retry import (
    AsyncRetryTransport,
    Idempotency,
    RetryBudget,
    RetryPolicy,
    RetryTransport,
    get_record,
)
from mcp_safe_retry.records import CONTAINED_ERROR_CODE, Outcome, Reason
from tests.helpers import (
    Script,
    json_reply,
    ok_result,
    rpc,
    sse_event,
    sse_reply,
    status_reply,
    tool_call,
)

URL = "http://mcp.test/mcp"
READ = RetryPolicy(tools={"lookup": Idempotency.READ})


def no_sleep(_: float) -> None:
    return None


# -- containment -------------------------------------------------------------------------


def test_contained_network_error_becomes_a_jsonrpc_error() -> None:
    script = Script(httpx.ConnectError("refused"))
    transport = RetryTransport(script, policy=READ, sleep=no_sleep, contain_failures=True)
    response = httpx.Client(transport=transport).post(URL, json=tool_call("lookup", id=4))
    body = response.json()
    assert body["id"] == 4 and body["error"]["code"] == CONTAINED_ERROR_CODE
    assert "NETWORK_ERROR after 3 attempt(s)" in body["error"]["message"]
    data = body["error"]["data"]
    assert data["source"] == "mcp-safe-retry" and data["local"] is True
    assert (data["outcome"], data["layer"], data["reason"]) == (
        "NETWORK_ERROR",
        "transport",
        "max_retries",
    )
    assert [a["errorKind"] for a in data["attempts"]] == ["connect"] * 3
    record = get_record(response)
    assert record is not None and record.classification is not None
    assert record.classification.outcome is Outcome.NETWORK_ERROR  # the record stays honest


def test_containment_is_off_by_default() -> None:
    transport = RetryTransport(Script(httpx.ConnectError("refused")), sleep=no_sleep)
    with pytest.raises(httpx.ConnectError):
        httpx.Client(transport=transport).post(URL, json=tool_call("x"))


def test_http_errors_are_contained_by_the_httpx_shells() -> None:
    # mcp 1.x (httpx) ends its session on a non-2xx answer; the httpx2 shells hand it on
    # (tests/shells/test_containment.py has both flavours and what is never contained).
    transport = RetryTransport(Script(status_reply(503)), sleep=no_sleep, contain_failures=True)
    answer = httpx.Client(transport=transport).post(URL, json=tool_call("x"))
    assert answer.status_code == 200 and answer.json()["error"]["code"] == CONTAINED_ERROR_CODE
    record = get_record(answer)
    assert record is not None and record.http_statuses == (503,)  # UNSAFE: sent once


def test_notifications_are_not_contained() -> None:
    transport = RetryTransport(Script(httpx.ReadError("x")), contain_failures=True)
    with pytest.raises(httpx.ReadError):
        httpx.Client(transport=transport).post(URL, json=rpc("notifications/initialized", id=None))


def test_contained_broken_stream_ends_with_an_error_event() -> None:
    broken = sse_reply(lambda i: [b": hello\n\n"], fail=httpx.RemoteProtocolError("peer closed"))
    transport = RetryTransport(Script(broken), contain_failures=True)
    with httpx.Client(transport=transport) as client:
        response = client.post(URL, json=tool_call("charge", id="c1"))
    last = response.content.split(b"data: ")[-1]
    error = json.loads(last)
    assert error["id"] == "c1" and error["error"]["code"] == CONTAINED_ERROR_CODE
    data = error["error"]["data"]
    assert data["source"] == "mcp-safe-retry" and data["local"] is True
    assert (data["outcome"], data["reason"]) == ("STREAM_INCOMPLETE", "not_idempotent")


def test_contained_error_code_is_one_the_spec_leaves_to_implementations() -> None:
    # 2026-07-28: -32000..-32019 are implementation-defined; -32020..-32099 are the
    # specification's own, and -32000 is what the SDKs raise for a closed connection.
    assert -32019 <= CONTAINED_ERROR_CODE < -32000


# -- stream resumption is the client's when the server numbered its events ---------------


def test_numbered_stream_is_left_to_last_event_id_resumption() -> None:
    first = sse_reply(lambda i: [b"id: ev-1\ndata: \n\n"], fail=httpx.ReadError("cut"))
    script = Script(first, sse_reply(lambda i: [sse_event(ok_result(i))]))
    transport = RetryTransport(script, sleep=no_sleep)
    with httpx.Client(transport=transport) as client, pytest.raises(httpx.ReadError):
        client.post(URL, json=rpc("tools/list", id=1))
    assert len(script.requests) == 1
    record = transport.history.last()
    assert record is not None
    assert record.attempts[-1].decision.reason is Reason.RESUMABLE  # type: ignore[union-attr]


# -- the retry budget --------------------------------------------------------------------


def test_budget_bounds_posts_under_a_total_outage() -> None:
    # The default budget's bound: N calls into an outage send at most N + min(2N, 100) POSTs.
    script = Script(status_reply(503))
    transport = RetryTransport(script, sleep=no_sleep)
    client = httpx.Client(transport=transport)
    calls = 1000
    for i in range(calls):
        client.post(URL, json=rpc("tools/list", id=i))
    assert len(script.requests) == calls + 100 <= 1110  # not 3x
    reasons = [r.attempts[-1].decision.reason for r in transport.history.records()]  # type: ignore[union-attr]
    assert reasons.count(Reason.THROTTLED) == calls - 50  # the first 50 calls spent 2 each


@pytest.mark.anyio
async def test_default_budget_retries_a_burst_in_full() -> None:
    # 50 concurrent READ calls all meet one 503 before any succeeds; each is retried.
    calls = 50
    seen: set[str] = set()
    arrived = anyio.Event()

    async def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        n = body["params"]["arguments"]["n"]
        if n not in seen:
            seen.add(n)
            if len(seen) == calls:
                arrived.set()
            await arrived.wait()  # every first attempt fails before any retry is sent
            return httpx.Response(503)
        return httpx.Response(200, json=ok_result(body["id"], text=n))

    policy = RetryPolicy(tools={"lookup": "read"}, initial_backoff=0.001)
    transport = AsyncRetryTransport(httpx.MockTransport(handler), policy=policy)
    statuses: list[int] = []
    async with httpx.AsyncClient(transport=transport) as client:

        async def one(i: int) -> None:
            response = await client.post(URL, json=tool_call("lookup", id=i, n=str(i)))
            statuses.append(response.status_code)

        async with anyio.create_task_group() as tg:
            for i in range(calls):
                tg.start_soon(one, i)
    assert statuses == [200] * calls
    assert [r.post_count for r in transport.history.records()] == [2] * calls


def test_one_budget_shared_by_two_transports() -> None:
    budget = RetryBudget(burst=4)
    a = RetryTransport(Script(status_reply(503)), sleep=no_sleep, budget=budget)
    b = RetryTransport(Script(status_reply(503)), sleep=no_sleep, budget=budget)
    for i in range(2):
        httpx.Client(transport=a).post(URL, json=rpc("ping", id=i))
    assert not budget.allow_retry()
    response = httpx.Client(transport=b).post(URL, json=rpc("ping", id=9))
    assert get_record(response).attempts[-1].decision.reason is Reason.THROTTLED  # type: ignore[union-attr]


# -- leaks, cancellation, concurrency ----------------------------------------------------


def test_no_leaks_over_1000_failing_calls() -> None:
    script = Script(status_reply(503), status_reply(502), json_reply(500, ok_result))
    transport = RetryTransport(script, policy=READ, sleep=no_sleep, budget=RetryBudget(1e9, 1))
    client = httpx.Client(transport=transport)
    for i in range(1000):
        script.requests.clear()
        client.post(URL, json=tool_call("lookup", id=i))
    assert len(script.streams) == 3000
    assert all(stream.closed for stream in script.streams)


@pytest.mark.anyio
async def test_cancellation_during_backoff_sends_nothing_more() -> None:
    script = Script(status_reply(503), json_reply(200, ok_result))
    policy = RetryPolicy(tools={"lookup": "read"}, initial_backoff=30, jitter="none")
    transport = AsyncRetryTransport(script, policy=policy)  # real anyio.sleep
    async with httpx.AsyncClient(transport=transport) as client:
        with anyio.move_on_after(0.2) as scope:
            await client.post(URL, json=tool_call("lookup", id=1))
        assert scope.cancelled_caught
        await anyio.sleep(0.05)
    assert len(script.requests) == 1
    record = transport.history.last()
    assert record is not None and record.complete
    assert record.post_count == 1  # the planned retry was never sent, nor recorded as sent
    assert record.classification is not None
    assert record.classification.outcome is Outcome.HTTP_ERROR
    assert record.attempts[-1].decision.reason is Reason.ABANDONED  # type: ignore[union-attr]
    assert all(stream.closed for stream in script.streams)


@pytest.mark.anyio
async def test_cancellation_during_a_send_is_recorded_and_not_retried() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        await anyio.sleep(30)
        return httpx.Response(200)

    policy = RetryPolicy(tools={"lookup": "read"})
    transport = AsyncRetryTransport(httpx.MockTransport(handler), policy=policy)
    async with httpx.AsyncClient(transport=transport) as client:
        with anyio.move_on_after(0.1):
            await client.post(URL, json=tool_call("lookup", id=1))
    record = transport.history.last()
    assert record is not None and record.post_count == 1
    assert record.classification is not None
    assert record.classification.outcome is Outcome.NETWORK_ERROR
    assert record.classification.error_kind == "cancelled"
    assert "Cancelled" in (record.classification.detail or "")
    assert record.attempts[-1].decision.reason is Reason.ABANDONED  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_500_concurrent_calls_keep_their_own_attempts() -> None:
    rng = random.Random(7)

    async def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        await anyio.sleep(rng.random() / 100)
        if rng.random() < 0.3:
            return httpx.Response(503)
        return httpx.Response(
            200, json=ok_result(body["id"], text=body["params"]["arguments"]["n"])
        )

    budget = RetryBudget()
    policy = RetryPolicy(tools={"lookup": "read"}, initial_backoff=0.001)
    transport = AsyncRetryTransport(httpx.MockTransport(handler), policy=policy, budget=budget)
    results: dict[int, httpx.Response] = {}
    async with httpx.AsyncClient(transport=transport) as client:

        async def one(i: int) -> None:
            results[i] = await client.post(URL, json=tool_call("lookup", id=i, n=str(i)))

        async with anyio.create_task_group() as tg:
            for i in range(500):
                tg.start_soon(one, i)
    for i, response in results.items():
        record = get_record(response)
        assert record is not None and record.request_id == i
        assert record.attempts[0].wire_id == i
        others = {a.wire_id for a in record.attempts[1:]}
        assert i not in others and len(others) == len(record.attempts) - 1
        if response.status_code == 200:
            assert response.json()["id"] == i
            assert response.json()["result"]["content"][0]["text"] == str(i)
    assert 0 <= budget.tokens <= budget.burst


# -- hostile input -----------------------------------------------------------------------


def test_endless_json_body_is_refused() -> None:
    class Endless(httpx.SyncByteStream):
        def __iter__(self):  # type: ignore[no-untyped-def]
            while True:
                yield b"[" * 65536

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "application/json"}, stream=Endless())

    transport = RetryTransport(httpx.MockTransport(handler), max_event_bytes=1 << 20)
    with pytest.raises(httpx.ReadError, match="larger than"):
        httpx.Client(transport=transport).post(URL, json=tool_call("x"))


def test_last_event_id_resumption_is_linked_to_its_call() -> None:
    def replies(body: dict[str, Any]) -> httpx.Response:
        if not body:  # the GET
            final = sse_event(ok_result(21), event_id="ev-2")
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=final)
        response = httpx.Response(200, headers={"content-type": "text/event-stream"})
        response._chunks = [b"id: ev-1\ndata: \n\n"]  # type: ignore[attr-defined]
        response._fail = httpx.ReadError("cut")  # type: ignore[attr-defined]
        return response

    script = Script(replies)
    transport = RetryTransport(script, sleep=no_sleep)
    with httpx.Client(transport=transport) as client:
        with pytest.raises(httpx.ReadError):
            client.post(URL, json=tool_call("charge", id=21))
        resumed = client.get(URL, headers={"last-event-id": "ev-1", "accept": "text/event-stream"})
    assert script.requests[1].headers["last-event-id"] == "ev-1"
    assert b'"id": 21' in resumed.content
    records = transport.history.records()
    assert len(records) == 1  # the resumed call replaced its incomplete snapshot
    record = records[0]
    assert get_record(resumed) == record
    assert [a.kind for a in record.attempts] == ["post", "resume"]
    assert record.post_count == 1 and record.complete
    assert record.attempts[0].decision.reason is Reason.RESUMABLE  # type: ignore[union-attr]
    assert record.classification is not None
    assert record.classification.outcome is Outcome.TOOL_SUCCESS


def test_unknown_last_event_id_passes_through() -> None:
    script = Script(httpx.Response(405))
    transport = RetryTransport(script)
    response = httpx.Client(transport=transport).get(URL, headers={"last-event-id": "zzz"})
    assert response.status_code == 405 and get_record(response) is None
