"""Invariants under arbitrary input: classify never raises, attempts stay bounded,
an UNSAFE call is never POSTed twice."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_safe_retry import CallLedger, Idempotency, RetryPolicy, RetryTransport, classify
from mcp_safe_retry.core.decision import decide
from mcp_safe_retry.core.headers import parse_retry_after
from mcp_safe_retry.core.outcomes import verdict
from mcp_safe_retry.core.sse import SSEDecoder
from mcp_safe_retry.policy import Jitter
from mcp_safe_retry.records import Outcome

CONTENT_TYPES = st.sampled_from(
    [
        None,
        "",
        "application/json",
        "text/event-stream",
        "application/json; charset=utf-16",
        "text/event-stream; charset=latin-1",
        "text/html",
        "application/json; charset=bogus",
    ]
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
ENVELOPE_LIKE = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]),
        "id": st.sampled_from([1, "1", None, True, 1.0, 2]),
        "result": JSON_VALUES,
        "error": JSON_VALUES,
    },
).map(lambda d: json.dumps(d).encode())
BODIES = (
    st.binary(max_size=300) | ENVELOPE_LIKE | ENVELOPE_LIKE.map(lambda b: b"data: " + b + b"\n\n")
)


@given(
    status=st.integers(-1000, 1000),
    body=BODIES,
    content_type=CONTENT_TYPES,
    expected_id=st.sampled_from([1, "1", None, "x"]),
    method=st.sampled_from(["tools/call", "tools/list", "ping"]),
)
@settings(max_examples=500, deadline=None)
def test_classify_never_raises(
    status: int, body: bytes, content_type: str | None, expected_id: Any, method: str
) -> None:
    c = classify(status, body, content_type=content_type, expected_id=expected_id, method=method)
    assert isinstance(c.outcome, Outcome)
    assert (c.status is not None) == (c.outcome in (Outcome.HTTP_ERROR, Outcome.REDIRECT))


@given(chunks=st.lists(st.binary(max_size=64), max_size=20), limit=st.integers(1, 200))
@settings(max_examples=300, deadline=None)
def test_sse_decoder_accounts_for_every_byte(chunks: list[bytes], limit: int) -> None:
    decoder = SSEDecoder(limit)
    out = b"".join(e.raw for chunk in chunks for e in decoder.feed(chunk))
    out += b"".join(e.raw for e in decoder.finish())
    assert out + decoder.pending() == b"".join(chunks)
    assert len(decoder.pending()) <= limit


@given(value=st.text(max_size=40), now=st.floats(0, 4e9))
def test_retry_after_parser_is_total(value: str, now: float) -> None:
    got = parse_retry_after(value, now)
    assert got is None or got >= 0


@given(
    attempt=st.integers(1, 50),
    elapsed=st.floats(0, 1e4),
    rand=st.floats(0, 0.999999),
    jitter=st.sampled_from(list(Jitter)),
    initial=st.floats(0, 5),
    mult=st.floats(1, 5),
    cap=st.floats(0, 60),
    retry_after=st.none() | st.floats(0, 100),
)
def test_delays_stay_within_bounds(  # noqa: PLR0917
    attempt: int,
    elapsed: float,
    rand: float,
    jitter: Jitter,
    initial: float,
    mult: float,
    cap: float,
    retry_after: float | None,
) -> None:
    policy = RetryPolicy(
        max_retries=100,
        initial_backoff=initial,
        backoff_multiplier=mult,
        max_backoff=cap,
        jitter=jitter,
    )
    d = decide(
        policy,
        idempotency=Idempotency.READ,
        classification=verdict(Outcome.HTTP_ERROR, status=429),
        attempt=attempt,
        elapsed=elapsed,
        retry_after=retry_after,
        rand=lambda: rand,
    )
    if d.retry:
        assert 0 <= d.delay <= max(cap, retry_after or 0) + 1e-9
        assert retry_after is None or d.delay >= retry_after


SCRIPTED = st.lists(
    st.sampled_from(["503", "429", "500", "200", "boom", "timeout", "bad", "404"]),
    min_size=1,
    max_size=8,
)


def _scripted(steps: list[str], posts: list[int]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        posts.append(1)
        step = steps[min(len(posts), len(steps)) - 1]
        body = json.loads(request.content)
        if step == "boom":
            raise httpx.ConnectError("refused")
        if step == "timeout":
            raise httpx.ReadTimeout("slow")
        if step == "bad":
            return httpx.Response(200, content=b"{", headers={"content-type": "application/json"})
        if step == "200":
            return httpx.Response(
                200, json={"jsonrpc": "2.0", "id": body["id"], "result": {"content": []}}
            )
        return httpx.Response(int(step), headers={"retry-after": "1"})

    return httpx.MockTransport(handler)


@given(steps=SCRIPTED, max_retries=st.integers(0, 4), read=st.booleans())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_attempts_are_bounded_and_unsafe_calls_reach_the_server_once(
    steps: list[str], max_retries: int, read: bool
) -> None:
    posts: list[int] = []
    policy = RetryPolicy(
        max_retries=max_retries, tools={"t": Idempotency.READ if read else Idempotency.UNSAFE}
    )
    transport = RetryTransport(  # each example a process of its own: a ledger of its own
        _scripted(steps, posts), policy=policy, sleep=lambda _: None, ledger=CallLedger()
    )
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t"}}
    with contextlib.suppress(httpx.TransportError):
        httpx.Client(transport=transport).post("http://mcp.test/", json=body)
    assert 1 <= len(posts) <= max_retries + 1
    if not read:
        # Re-sent only after a connect error, which the server never saw: it saw one at most.
        seen = [steps[min(n, len(steps)) - 1] != "boom" for n in range(1, len(posts) + 1)]
        assert sum(seen) <= 1 and not any(seen[:-1])
    record = transport.history.last()
    assert record is not None and record.complete and record.post_count == len(posts)


@given(value=JSON_VALUES | st.integers(min_value=-(10**40), max_value=10**40))
@settings(max_examples=300, deadline=None)
def test_fast_json_reads_exactly_what_the_stdlib_reads(value: Any) -> None:
    from mcp_safe_retry.core import jsonrpc as _jsonrpc

    data = json.dumps(value).encode()
    assert _jsonrpc.loads(data) == json.loads(data)
    assert type(_jsonrpc.loads(data)) is type(json.loads(data))
