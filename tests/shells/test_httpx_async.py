"""Retry sequences through both transports, with a scripted inner transport."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import mcp_safe_retry
from mcp_safe_retry import (
    AsyncRetryTransport,
    CallLedger,
    History,
    Idempotency,
    RetryBudget,
    RetryPolicy,
    RetryTransport,
    get_record,
    retry_origin,
)
from mcp_safe_retry.core import jsonrpc
from mcp_safe_retry.records import CallRecord, Outcome, Reason, RetryOrigin
from tests.helpers import (
    Script,
    Sleeps,
    json_reply,
    ok_result,
    rpc,
    sse_event,
    sse_reply,
    status_reply,
    tool_call,
)

pytestmark = pytest.mark.anyio
URL = "http://mcp.test/mcp"
READ_TOOLS = RetryPolicy(tools={"lookup": Idempotency.READ})


class Driver:
    """Sends through a sync or an async client over the same scripted inner transport."""

    def __init__(self, mode: str, script: Script, **kwargs: Any) -> None:
        self.mode = mode
        self.script = script
        self.sleeps = Sleeps()
        self.transport: RetryTransport | AsyncRetryTransport
        if mode == "sync":
            self.transport = RetryTransport(script, sleep=self.sleeps, **kwargs)
        else:
            self.transport = AsyncRetryTransport(script, sleep=self.sleeps.asleep, **kwargs)

    async def send(self, request: httpx.Request) -> httpx.Response:
        if isinstance(self.transport, RetryTransport):
            with httpx.Client(transport=self.transport) as client:
                return client.send(request)
        async with httpx.AsyncClient(transport=self.transport) as client:
            return await client.send(request)

    async def post(self, body: Any, **kwargs: Any) -> httpx.Response:
        return await self.send(httpx.Request("POST", URL, json=body, **kwargs))

    async def stream_text(self, body: Any) -> tuple[httpx.Response, bytes]:
        request = httpx.Request("POST", URL, json=body)
        if isinstance(self.transport, RetryTransport):
            client = httpx.Client(transport=self.transport)
            response = client.send(request, stream=True)
            data = b"".join(response.iter_raw())
            response.close()
            return response, data
        aclient = httpx.AsyncClient(transport=self.transport)
        response = await aclient.send(request, stream=True)
        data = b"".join([chunk async for chunk in response.aiter_raw()])
        await response.aclose()
        return response, data

    @property
    def history(self) -> History:
        return self.transport.history


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def record_of(response: httpx.Response) -> CallRecord:
    record = get_record(response)
    assert record is not None
    return record


async def test_read_is_retried_until_success(mode: str) -> None:
    script = Script(status_reply(503), status_reply(503), json_reply(200, ok_result))
    d = Driver(mode, script, policy=READ_TOOLS)
    response = await d.post(tool_call("lookup", id=41))
    assert response.status_code == 200
    assert response.json()["id"] == 41  # the caller's id is back
    assert len(script.requests) == 3
    ids = script.wire_ids
    assert ids[0] == 41 and len(set(ids)) == 3  # every re-send has a fresh id
    record = record_of(response)
    assert [a.retry_origin for a in record.attempts] == [
        RetryOrigin.NONE,
        RetryOrigin.SDK,
        RetryOrigin.SDK,
    ]
    assert record.http_statuses == (503, 503, 200)
    assert record.post_count == 3 and record.complete
    assert (
        record.classification is not None and record.classification.outcome is Outcome.TOOL_SUCCESS
    )
    assert 0.1 <= d.sleeps.calls[0] <= 0.2 and 0.2 <= d.sleeps.calls[1] <= 0.4
    assert [a.delay for a in record.attempts[1:]] == d.sleeps.calls
    assert [a.decision.reason for a in record.attempts if a.decision] == [
        Reason.RETRYABLE_STATUS,
        Reason.RETRYABLE_STATUS,
        Reason.SUCCESS,
    ]
    assert all(s.closed for s in script.streams)  # discarded responses were closed
    assert d.history.last() == record


async def test_unsafe_tool_is_never_resent(mode: str) -> None:
    script = Script(status_reply(503), json_reply(200, ok_result))
    d = Driver(mode, script)
    response = await d.post(tool_call("charge", amount=5))
    assert response.status_code == 503
    assert len(script.requests) == 1
    attempt = record_of(response).attempts[-1]
    assert attempt.decision is not None and attempt.decision.reason is Reason.NOT_IDEMPOTENT


async def test_max_retries_then_the_last_answer(mode: str) -> None:
    script = Script(status_reply(502))
    d = Driver(mode, script, policy=READ_TOOLS)
    response = await d.post(rpc("tools/list", id=3))
    assert response.status_code == 502
    assert len(script.requests) == 3
    assert record_of(response).attempts[-1].decision.reason is Reason.MAX_RETRIES  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(
            json_reply(
                200,
                lambda i: {"jsonrpc": "2.0", "id": i, "error": {"code": -32603, "message": "x"}},
            ),
            id="jsonrpc-error",
        ),
        pytest.param(json_reply(200, lambda i: ok_result(i, is_error=True)), id="tool-error"),
        pytest.param(json_reply(200, b"{nope"), id="malformed"),
        pytest.param(
            json_reply(200, lambda i: {"jsonrpc": "2.0", "id": "other", "result": {}}),
            id="wrong-id",
        ),
        pytest.param(
            json_reply(200, lambda i: {"jsonrpc": "2.0", "id": i, "result": {"content": 1}}),
            id="bad-result",
        ),
        pytest.param(
            json_reply(
                200,
                lambda i: {
                    "jsonrpc": "2.0",
                    "id": i,
                    "result": {"resultType": "input_required", "requestState": "s"},
                },
            ),
            id="input-required",
        ),
        pytest.param(status_reply(404), id="404"),
    ],
)
async def test_protocol_and_tool_errors_are_never_retried(mode: str, reply: Any) -> None:
    script = Script(reply, json_reply(200, ok_result))
    d = Driver(mode, script, policy=READ_TOOLS)
    await d.post(tool_call("lookup"))
    assert len(script.requests) == 1


async def test_network_errors_of_reads_are_retried(mode: str) -> None:
    script = Script(
        httpx.ConnectError("refused"), httpx.ReadTimeout("slow"), json_reply(200, ok_result)
    )
    d = Driver(mode, script, policy=READ_TOOLS)
    response = await d.post(tool_call("lookup", id=5))
    assert response.json()["id"] == 5
    kinds = [a.error_kind for a in record_of(response).attempts]
    assert kinds == ["connect", "timeout", None]


async def test_network_error_propagates_once_retries_are_exhausted(mode: str) -> None:
    script = Script(httpx.RemoteProtocolError("peer closed"))
    d = Driver(mode, script, policy=READ_TOOLS)
    with pytest.raises(httpx.RemoteProtocolError):
        await d.post(tool_call("lookup"))
    assert len(script.requests) == 3
    record = d.history.last()
    assert record is not None and record.complete
    assert (
        record.classification is not None and record.classification.outcome is Outcome.NETWORK_ERROR
    )
    assert record.attempts[-1].decision.reason is Reason.MAX_RETRIES  # type: ignore[union-attr]


async def test_network_error_of_an_unsafe_call_propagates_at_once(mode: str) -> None:
    script = Script(httpx.ReadError("reset"), json_reply(200, ok_result))
    d = Driver(mode, script)
    with pytest.raises(httpx.ReadError):
        await d.post(tool_call("send_email"))
    assert len(script.requests) == 1


async def test_local_errors_are_not_retried(mode: str) -> None:
    script = Script(httpx.UnsupportedProtocol("ftp?"))
    d = Driver(mode, script, policy=READ_TOOLS)
    with pytest.raises(httpx.UnsupportedProtocol):
        await d.post(rpc("ping"))
    assert len(script.requests) == 1


async def test_read_error_while_reading_the_body(mode: str) -> None:
    broken = httpx.Response(200, headers={"content-type": "application/json"})
    broken._chunks = [b'{"jsonrpc":']  # type: ignore[attr-defined]
    broken._fail = httpx.ReadError("cut")  # type: ignore[attr-defined]
    script = Script(broken, json_reply(200, ok_result))
    d = Driver(mode, script, policy=READ_TOOLS)
    response = await d.post(tool_call("lookup", id=9))
    assert response.json()["id"] == 9
    assert record_of(response).attempts[0].error_kind == "read"
    assert all(s.closed for s in script.streams)


async def test_retry_after_seconds_is_honoured(mode: str) -> None:
    script = Script(
        status_reply(429, retry_after="2"),
        json_reply(200, lambda i: {"jsonrpc": "2.0", "id": i, "result": {"tools": []}}),
    )
    d = Driver(mode, script)
    response = await d.post(rpc("tools/list", id=1))
    assert response.status_code == 200
    assert d.sleeps.calls == [2.0]
    assert record_of(response).attempts[0].retry_after == 2.0


async def test_retry_after_over_the_cap_is_the_answer(mode: str) -> None:
    script = Script(
        json_reply(
            429,
            lambda i: {
                "jsonrpc": "2.0",
                "id": i,
                "error": {"code": -32029, "message": "slow down"},
            },
            retry_after="3600",
        ),
        json_reply(200, ok_result),
    )
    d = Driver(mode, script)
    response = await d.post(rpc("tools/list", id=1))
    assert response.status_code == 429 and len(script.requests) == 1
    record = record_of(response)
    assert record.attempts[0].decision.reason is Reason.RETRY_AFTER_OVER_CAP  # type: ignore[union-attr]
    assert record.to_dict()["jsonrpc"] == {"id": 1, "errorCode": -32029}


async def test_deadline_stops_retries(mode: str) -> None:
    now = [0.0]

    def clock() -> float:
        return now[0]

    script = Script(status_reply(503))
    d = Driver(
        mode,
        script,
        policy=RetryPolicy(deadline=1.0, initial_backoff=0.4, max_retries=5, jitter="none"),
        clock=clock,
    )
    original = d.sleeps.calls

    class AdvancingSleeps(Sleeps):
        def __call__(self, seconds: float) -> None:
            original.append(seconds)
            now[0] += seconds

        async def asleep(self, seconds: float) -> None:
            self(seconds)

    sleeper = AdvancingSleeps()
    d.transport.sleep = sleeper if mode == "sync" else sleeper.asleep  # type: ignore[union-attr]
    response = await d.post(rpc("ping", id=1))
    assert response.status_code == 503
    assert original == [0.4]  # 0.4 + 0.8 would pass the 1 s deadline
    assert record_of(response).attempts[-1].decision.reason is Reason.DEADLINE  # type: ignore[union-attr]


async def test_notifications_are_accepted_and_never_resent(mode: str) -> None:
    script = Script(httpx.Response(202))
    d = Driver(mode, script)
    response = await d.post(rpc("notifications/initialized", id=None))
    assert response.status_code == 202
    record = record_of(response)
    assert record.classification is not None and record.classification.outcome is Outcome.ACCEPTED
    failing = Script(status_reply(503))
    d2 = Driver(mode, failing, policy=RetryPolicy(tools={"*": "read"}))
    await d2.post(rpc("notifications/initialized", id=None))
    assert len(failing.requests) == 1


@pytest.mark.parametrize(
    "request_",
    [
        pytest.param(
            httpx.Request("GET", URL, headers={"accept": "text/event-stream"}), id="get-stream"
        ),
        pytest.param(httpx.Request("DELETE", URL), id="delete"),
        pytest.param(
            httpx.Request("POST", URL, content=b"hello", headers={"content-type": "text/plain"}),
            id="text",
        ),
        pytest.param(
            httpx.Request(
                "POST", URL, content=b"{not json", headers={"content-type": "application/json"}
            ),
            id="bad-json",
        ),
        pytest.param(httpx.Request("POST", URL, json=[rpc("ping", id=1)]), id="batch"),
        pytest.param(
            httpx.Request("POST", URL, json={"jsonrpc": "2.0", "id": 1, "result": {}}),
            id="client-response",
        ),
    ],
)
async def test_pass_through(mode: str, request_: httpx.Request) -> None:
    script = Script(status_reply(503))
    d = Driver(mode, script, policy=RetryPolicy(tools={"*": "read"}))
    response = await d.send(request_)
    assert response.status_code == 503
    assert len(script.requests) == 1
    assert get_record(response) is None
    assert len(d.history) == 0


async def test_sse_is_passed_through_and_classified(mode: str) -> None:
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}

    def events(i: Any) -> list[bytes]:
        whole = b": hi\n\n" + sse_event(progress) + sse_event(ok_result(i))
        return [whole[:7], whole[7:30], whole[30:31], whole[31:]]  # cut anywhere

    script = Script(sse_reply(events))
    d = Driver(mode, script)
    response, data = await d.stream_text(tool_call("charge", id=3))
    assert data == b": hi\n\n" + sse_event(progress) + sse_event(ok_result(3))
    record = record_of(response)
    assert record.complete and record.classification is not None
    assert record.classification.outcome is Outcome.TOOL_SUCCESS
    assert all(s.closed for s in script.streams)


async def test_sse_answer_after_a_retry_gets_the_callers_id(mode: str) -> None:
    script = Script(
        status_reply(503), sse_reply(lambda i: [sse_event(ok_result(i), event_id="e1")])
    )
    d = Driver(mode, script)
    response, data = await d.stream_text(rpc("tools/list", id=12))
    assert get_record(response).complete  # type: ignore[union-attr]
    assert script.wire_ids[1] != 12
    assert b'"id":12' in data and str(script.wire_ids[1]).encode() not in data
    assert b"id: e1\n" in data


async def test_sse_answer_keeps_its_head_but_not_a_length_it_may_no_longer_have(
    mode: str,
) -> None:
    def sized(request: dict[str, Any]) -> httpx.Response:
        body = sse_event(ok_result(request.get("id")))
        headers = {"content-type": "text/event-stream", "content-length": str(len(body))}
        response = httpx.Response(200, headers={**headers, "x-server": "kitchen"})
        response._chunks = [body]  # type: ignore[attr-defined]
        return response

    script = Script(status_reply(503), sized)
    d = Driver(mode, script)
    response, data = await d.stream_text(rpc("tools/list", id=12))
    assert b'"id":12' in data  # restored: no longer the length the server sent
    assert "content-length" not in response.headers
    assert response.headers["x-server"] == "kitchen"
    assert all(s.closed for s in script.streams)

    plain = Script(sse_reply(lambda i: [sse_event(ok_result(i))]))
    response, data = await Driver(mode, plain).stream_text(tool_call(id=4))
    assert data == sse_event(ok_result(4))
    assert response.headers["content-type"] == "text/event-stream"
    assert get_record(response).complete  # type: ignore[union-attr]
    assert all(s.closed for s in plain.streams)


async def test_broken_sse_stream_of_a_read_is_reissued_and_spliced(mode: str) -> None:
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
    first = sse_reply(
        lambda i: [sse_event(progress), b'event: message\ndata: {"jsonr'],
        fail=httpx.RemoteProtocolError("peer closed"),
    )
    second = sse_reply(lambda i: [sse_event(ok_result(i))])
    script = Script(first, second)
    d = Driver(mode, script, policy=READ_TOOLS)
    response, data = await d.stream_text(tool_call("lookup", id=8))
    messages = [json.loads(line[6:]) for line in data.split(b"\n") if line.startswith(b"data: ")]
    assert messages == [progress, ok_result(8)]  # the half event was never handed on
    record = record_of(response)
    assert [a.classification.outcome for a in record.attempts] == [
        Outcome.STREAM_INCOMPLETE,
        Outcome.TOOL_SUCCESS,
    ]
    assert record.attempts[0].error_kind == "protocol"
    assert all(s.closed for s in script.streams)


async def test_stream_reissue_answered_with_json_is_spliced_as_an_event(mode: str) -> None:
    first = sse_reply(lambda i: [b": start\n\n"])  # ends cleanly without a response
    script = Script(
        first, json_reply(200, lambda i: {"jsonrpc": "2.0", "id": i, "result": {"tools": []}})
    )
    d = Driver(mode, script)
    response, data = await d.stream_text(rpc("tools/list", id="abc"))
    assert data.endswith(b'data: {"jsonrpc":"2.0","id":"abc","result":{"tools":[]}}\n\n')
    assert record_of(response).classification.outcome is Outcome.RPC_SUCCESS  # type: ignore[union-attr]


async def test_broken_sse_stream_of_an_unsafe_call_is_incomplete(mode: str) -> None:
    first = sse_reply(lambda i: [b"event: message\ndata: {"], fail=httpx.ReadError("reset"))
    script = Script(first, sse_reply(lambda i: [sse_event(ok_result(i))]))
    d = Driver(mode, script)
    with pytest.raises(httpx.ReadError):
        await d.stream_text(tool_call("charge", id=8))
    assert len(script.requests) == 1
    record = d.history.last()
    assert record is not None and record.classification is not None
    assert record.classification.outcome is Outcome.STREAM_INCOMPLETE
    assert record.attempts[-1].decision.reason is Reason.NOT_IDEMPOTENT  # type: ignore[union-attr]


async def test_sse_closed_early_by_the_caller_completes_the_record(mode: str) -> None:
    script = Script(
        sse_reply(lambda i: [sse_event({"jsonrpc": "2.0", "method": "notifications/progress"})] * 3)
    )
    d = Driver(mode, script)
    request = httpx.Request("POST", URL, json=tool_call("charge", id=1))
    if isinstance(d.transport, RetryTransport):
        with (
            httpx.Client(transport=d.transport) as client,
            client.stream("POST", URL, json=tool_call("charge", id=1)) as response,
        ):
            next(response.iter_raw())
    else:
        async with httpx.AsyncClient(transport=d.transport) as aclient:
            response = await aclient.send(request, stream=True)
            await response.aclose()
    record = d.history.last()
    assert record is not None and record.complete
    assert (
        record.classification is not None
        and record.classification.outcome is Outcome.STREAM_INCOMPLETE
    )
    assert all(s.closed for s in script.streams)


async def test_origins_marked_by_context_and_extension(mode: str) -> None:
    script = Script(json_reply(200, ok_result))
    d = Driver(mode, script)
    with retry_origin("manual"):
        manual = await d.post(tool_call("charge", id=1))
    marked = await d.send(
        httpx.Request(
            "POST",
            URL,
            json=tool_call("charge", id=2),
            extensions={"mcp_safe_retry.retry_origin": "application"},
        )
    )
    plain = await d.post(tool_call("charge", id=3, n=1))
    assert record_of(manual).retry_origin is RetryOrigin.MANUAL
    assert record_of(marked).retry_origin is RetryOrigin.APPLICATION
    assert record_of(plain).retry_origin is RetryOrigin.NONE


async def test_application_resend_is_detected(mode: str) -> None:
    script = Script(
        json_reply(200, lambda i: ok_result(i, is_error=True)), json_reply(200, ok_result)
    )
    d = Driver(mode, script)
    first = await d.post(tool_call("charge", id=1, amount=5))
    again = await d.post(tool_call("charge", id=2, amount=5))
    other = await d.post(tool_call("charge", id=3, amount=6))
    after_success = await d.post(tool_call("charge", id=4, amount=5))
    assert [record_of(r).retry_origin for r in (first, again, other, after_success)] == [
        RetryOrigin.NONE,
        RetryOrigin.APPLICATION,
        RetryOrigin.NONE,
        RetryOrigin.NONE,
    ]


async def test_a_resend_read_by_the_other_reader_is_detected(mode: str) -> None:
    """The failed call is read by the standard library alone, its re-send (keys in another
    order, another progress token) by the quick reader: one digest, so it is a re-send."""
    script = Script(
        json_reply(200, lambda i: ok_result(i, is_error=True)), json_reply(200, ok_result)
    )
    d = Driver(mode, script)
    first_call = tool_call("charge", id=1, amount=5, currency="eur")
    first_call["params"]["_meta"] = {"progressToken": "p-1"}
    before = jsonrpc.use_fast_parser(False)
    try:
        first = await d.post(first_call)
    finally:
        jsonrpc.use_fast_parser(before)
    again_call = tool_call("charge", id=2, currency="eur", amount=5)
    again_call["params"]["_meta"] = {"progressToken": "p-2"}
    again = await d.post(again_call)
    assert record_of(first).arguments_digest == record_of(again).arguments_digest
    assert record_of(again).retry_origin is RetryOrigin.APPLICATION


async def test_trusted_annotations_make_a_tool_read(mode: str) -> None:
    tools = {
        "tools": [
            {"name": "lookup", "annotations": {"readOnlyHint": True}},
            {"name": "charge", "annotations": {"readOnlyHint": False}},
        ]
    }
    listing = json_reply(200, lambda i: {"jsonrpc": "2.0", "id": i, "result": tools})
    script = Script(listing, status_reply(503), json_reply(200, ok_result), status_reply(503))
    d = Driver(mode, script, policy=RetryPolicy(trust_annotations=True))
    await d.post(rpc("tools/list", id=1))
    ok = await d.post(tool_call("lookup", id=2))
    assert ok.status_code == 200 and len(script.requests) == 3
    failed = await d.post(tool_call("charge", id=3))
    assert failed.status_code == 503 and len(script.requests) == 4


async def test_initialize_is_learnt(mode: str) -> None:
    init = rpc(
        "initialize",
        id=0,
        protocolVersion="2025-11-25",
        clientInfo={"name": "agent", "version": "1.2"},
        capabilities={},
    )
    script = Script(
        json_reply(
            200,
            lambda i: {"jsonrpc": "2.0", "id": i, "result": {"protocolVersion": "2025-11-25"}},
            mcp_session_id="s-1",
        ),
        json_reply(200, ok_result),
    )
    d = Driver(mode, script, scenario="unit")
    await d.post(init)
    response = await d.post(tool_call("charge", id=1), headers={"mcp-session-id": "s-1"})
    diag = record_of(response).to_dict()
    assert (diag["client"], diag["protocolVersion"], diag["scenario"]) == (
        "agent@1.2",
        "2025-11-25",
        "unit",
    )
    assert record_of(response).session_id == "s-1"
    json.dumps(diag)  # plain JSON types only


async def test_hook_failures_never_break_a_call(mode: str) -> None:
    seen: list[str] = []

    class Hook:
        def on_attempt(self, record: CallRecord, attempt: Any) -> None:
            seen.append("attempt")
            raise RuntimeError("hook bug")

        def on_call(self, record: CallRecord) -> None:
            seen.append("call")
            raise RuntimeError("hook bug")

    script = Script(status_reply(503), json_reply(200, ok_result))
    d = Driver(mode, script, hooks=[Hook()], policy=READ_TOOLS)
    response = await d.post(tool_call("lookup"))
    assert response.status_code == 200
    assert seen == ["attempt", "attempt", "call"]


async def test_history_is_bounded(mode: str) -> None:
    script = Script(json_reply(200, ok_result))
    d = Driver(mode, script, history=History(maxlen=3))
    for i in range(5):
        await d.post(tool_call("charge", id=i, n=i))
    assert [r.request_id for r in d.history.records()] == [2, 3, 4]
    d.history.clear()
    assert d.history.last() is None


async def test_gzip_json_is_read_decoded(mode: str) -> None:
    import gzip

    def reply(body: dict[str, Any]) -> httpx.Response:
        raw = gzip.compress(json.dumps(ok_result(body["id"])).encode())
        return httpx.Response(
            200,
            headers={"content-type": "application/json", "content-encoding": "gzip"},
            content=raw,
        )

    d = Driver(mode, Script(reply))
    response = await d.post(tool_call("charge", id=4))
    assert response.json() == ok_result(4)
    assert record_of(response).classification.outcome is Outcome.TOOL_SUCCESS  # type: ignore[union-attr]


async def test_oversized_json_body_is_refused_not_retried(mode: str) -> None:
    script = Script(
        json_reply(
            200, lambda i: {"jsonrpc": "2.0", "id": i, "result": {"content": [], "pad": "x" * 5000}}
        )
    )
    d = Driver(mode, script, policy=READ_TOOLS, max_event_bytes=1000)
    with pytest.raises(mcp_safe_retry.BodyTooLarge, match="larger than") as caught:
        await d.post(tool_call("lookup"))
    assert isinstance(caught.value, httpx.ReadError)
    assert len(script.requests) == 1
    record = get_record(caught.value)
    assert record is not None and record.attempts[-1].error_kind == "oversized"


async def test_close_reaches_the_inner_transport(mode: str) -> None:
    script = Script(json_reply(200, ok_result))
    d = Driver(mode, script)
    await d.post(tool_call("x"))
    assert script.closed  # the client closed the wrapper, which closed the inner transport


async def test_sse_closed_after_its_response_is_a_success(mode: str) -> None:
    more = sse_event({"jsonrpc": "2.0", "method": "notifications/message", "params": {}})
    script = Script(sse_reply(lambda i: [sse_event(ok_result(i)), more, more]))
    d = Driver(mode, script)
    request = httpx.Request("POST", URL, json=tool_call("charge", id=1))
    if isinstance(d.transport, RetryTransport):
        with httpx.Client(transport=d.transport) as client:
            response = client.send(request, stream=True)
            next(response.iter_raw())
            response.close()
    else:
        async with httpx.AsyncClient(transport=d.transport) as aclient:
            response = await aclient.send(request, stream=True)
            await response.aiter_raw().__anext__()
            await response.aclose()
    record = d.history.last()
    assert record is not None and record.complete
    assert record.classification is not None
    assert record.classification.outcome is Outcome.TOOL_SUCCESS
    assert record.attempts[-1].decision.reason is Reason.SUCCESS  # type: ignore[union-attr]


async def test_unsafe_call_that_never_left_is_resent_by_default(mode: str) -> None:
    script = Script(httpx.ConnectError("refused"), json_reply(200, ok_result))
    d = Driver(mode, script)
    response = await d.post(tool_call("charge", id=6))
    assert response.json()["id"] == 6
    attempts = record_of(response).attempts
    assert [a.error_kind for a in attempts] == ["connect", None]
    assert attempts[0].decision.reason is Reason.UNSENT  # type: ignore[union-attr]
    for error in (
        httpx.ReadError("reset"),
        httpx.ReadTimeout("slow"),
        httpx.RemoteProtocolError("x"),
    ):
        after_sending = Script(error, json_reply(200, ok_result))
        d2 = Driver(mode, after_sending, ledger=CallLedger())  # each may have run: held next
        with pytest.raises(type(error)):
            await d2.post(tool_call("charge", id=7))
        assert len(after_sending.requests) == 1  # the server may have seen it: never again
    opted_out = Script(httpx.ConnectError("refused"), json_reply(200, ok_result))
    d3 = Driver(mode, opted_out, policy=RetryPolicy(retry_unsent=False))
    with pytest.raises(httpx.ConnectError):
        await d3.post(tool_call("charge", id=8))
    assert len(opted_out.requests) == 1


async def test_a_notification_that_never_left_is_resent_as_it_was(mode: str) -> None:
    script = Script(httpx.ConnectError("refused"), status_reply(202))
    d = Driver(mode, script)
    notice = rpc("notifications/roots/list_changed", id=None)
    response = await d.post(notice)
    assert response.status_code == 202
    assert script.bodies == [notice, notice]  # no id added: it stays a notification


async def test_unsent_retries_are_throttled_by_the_retry_budget(mode: str) -> None:
    budget = RetryBudget.grpc(max_tokens=2)
    script = Script(*[httpx.ConnectError("refused")] * 10)
    d = Driver(mode, script, budget=budget)
    with pytest.raises(httpx.ConnectError):
        await d.post(tool_call("charge", id=9))
    record = d.transport.history.last()
    assert record is not None
    # The first failure takes a token and leaves 1 of 2: no longer more than half.
    assert len(script.requests) == 1
    assert record.attempts[-1].decision.reason is Reason.THROTTLED  # type: ignore[union-attr]


async def test_a_second_answer_to_one_request_is_not_handed_on(mode: str) -> None:
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
    script = Script(
        sse_reply(
            lambda i: [
                sse_event(ok_result(i)),
                sse_event(progress),
                sse_event(ok_result(i, text="again")),
            ]
        )
    )
    d = Driver(mode, script)
    response, data = await d.stream_text(tool_call("charge", id=5))
    messages = [json.loads(line[6:]) for line in data.split(b"\n") if line.startswith(b"data: ")]
    assert messages == [ok_result(5), progress]  # the final response, exactly once
    assert record_of(response).classification.outcome is Outcome.TOOL_SUCCESS  # type: ignore[union-attr]


async def test_the_final_exception_carries_the_history(mode: str) -> None:
    script = Script(httpx.ConnectError("refused"))
    d = Driver(mode, script, policy=READ_TOOLS)
    with pytest.raises(httpx.ConnectError) as caught:
        await d.post(tool_call("lookup", id=3))
    record = get_record(caught.value)
    assert record is not None and record == d.history.last()
    assert record.post_count == 3
    (note,) = caught.value.__notes__
    assert note == (
        "mcp-safe-retry: tools/call lookup (id 3, read): 3 attempt(s) [connect, connect, connect], "
        "then max_retries"
    )


@pytest.mark.parametrize(
    ("declared", "posts"),
    [
        pytest.param("read", 2, id="read"),
        pytest.param("unsafe", 1, id="unsafe"),
        pytest.param("sometimes", 1, id="invalid-is-ignored"),
    ],
)
async def test_a_request_can_declare_its_idempotency(mode: str, declared: str, posts: int) -> None:
    script = Script(status_reply(503), json_reply(200, ok_result))
    d = Driver(mode, script)  # charge is UNSAFE by the policy
    request = httpx.Request(
        "POST",
        URL,
        json=tool_call("charge", id=1),
        extensions={"mcp_safe_retry.idempotency": declared},
    )
    await d.send(request)
    assert len(script.requests) == posts
    listing = Script(status_reply(503), json_reply(200, ok_result))
    d2 = Driver(mode, listing)  # tools/list is READ by the protocol
    ext = {"mcp_safe_retry.idempotency": "unsafe"}
    await d2.send(httpx.Request("POST", URL, json=rpc("tools/list", id=2), extensions=ext))
    assert len(listing.requests) == 1


@pytest.mark.parametrize("request_id", [0, "", "0"])
async def test_falsy_request_ids_are_matched_exactly(mode: str, request_id: Any) -> None:
    script = Script(json_reply(200, ok_result))
    d = Driver(mode, script)
    response = await d.post(tool_call("charge", id=request_id))
    record = record_of(response)
    assert record.classification is not None
    assert record.classification.outcome is Outcome.TOOL_SUCCESS
    assert response.json()["id"] == request_id
