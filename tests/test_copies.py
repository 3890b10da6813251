"""Values survive what frameworks do to them: ``copy.copy``, ``copy.deepcopy``, pickling.

Immutable values copy and pickle as equal values. Holders of live shared state (History,
budgets, breakers, hooks, sinks) copy as themselves, and a pickle loaded in this process is
the same object; loaded elsewhere it is a fresh one with the same settings.
"""

from __future__ import annotations

import copy
import functools
import gc
import io
import json
import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider

import mcp_safe_retry
import mcp_safe_retry.httpx2
from mcp_safe_retry import CircuitBreaker, History, Idempotency, RetryBudget, RetryPolicy
from mcp_safe_retry.core.breaker import CircuitState
from mcp_safe_retry.core.budget import GrpcBudget
from mcp_safe_retry.hooks import JsonLinesSink
from mcp_safe_retry.instrumentation.logs import LoggingHook
from mcp_safe_retry.otel import OpenTelemetryHook
from mcp_safe_retry.policy import AdaptiveDelay, Jitter
from mcp_safe_retry.redis import RedisBudget, RedisCircuitBreaker
from tests.helpers import ok_result, tool_call
from tests.redis_support import RedisServer

NOWHERE = "redis://127.0.0.1:9/0"  # never connected to: building one makes no round trip


def roundtrip(value: Any) -> Any:
    return pickle.loads(pickle.dumps(value))


COPIES = [
    pytest.param(copy.copy, id="copy"),
    pytest.param(copy.deepcopy, id="deepcopy"),
    pytest.param(roundtrip, id="pickle"),
]

POLICY = RetryPolicy(
    tools={"lookup": Idempotency.READ, "get_*": "read", "charge": "unsafe"},
    max_retries=3,
    jitter=Jitter.FULL,
    retry_statuses={503},
    deadline=9.0,
    hedge_after=AdaptiveDelay(quantile=0.9),
    max_hedges=2,
)

VALUES = [
    pytest.param(lambda: POLICY, id="RetryPolicy"),
    pytest.param(RetryPolicy, id="RetryPolicy-default"),
    pytest.param(lambda: RetryPolicy(hedge_after=0.5), id="RetryPolicy-hedge-seconds"),
    pytest.param(lambda: Idempotency.READ, id="Idempotency"),
    pytest.param(lambda: {"lookup": Idempotency.READ}, id="Idempotency-map"),
    pytest.param(lambda: AdaptiveDelay(floor=0.01, initial=0.1), id="AdaptiveDelay"),
    pytest.param(lambda: Jitter.EQUAL, id="Jitter"),
]


@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize("make", VALUES)
def test_an_immutable_value_copies_as_an_equal_value(
    make: Callable[[], Any], how: Callable[[Any], Any]
) -> None:
    value = make()
    copied = how(value)
    assert copied == value and type(copied) is type(value)
    if isinstance(value, RetryPolicy):  # tools is left out of ==: compare it by hand
        assert dict(copied.tools) == dict(value.tools)
        with pytest.raises(TypeError):  # still read-only after the trip
            copied.tools["lookup"] = Idempotency.UNSAFE  # type: ignore[index]
        answer = value.idempotency("tools/call", "get_user")
        assert copied.idempotency("tools/call", "get_user") is answer


def test_a_copied_policy_decides_as_the_original() -> None:
    copied = roundtrip(copy.deepcopy(POLICY))
    for tool in ("lookup", "get_user", "charge", "other"):
        assert copied.idempotency("tools/call", tool) is POLICY.idempotency("tools/call", tool)
    assert [copied.backoff(n, lambda: 0.5) for n in (1, 2, 3)] == [
        POLICY.backoff(n, lambda: 0.5) for n in (1, 2, 3)
    ]


policies = st.builds(
    RetryPolicy,
    max_retries=st.integers(0, 10),
    initial_backoff=st.floats(0, 5),
    jitter=st.sampled_from(Jitter),
    retry_statuses=st.frozensets(st.integers(400, 599)),
    deadline=st.none() | st.floats(0.1, 60),
    tools=st.dictionaries(st.text(max_size=8), st.sampled_from(Idempotency), max_size=4),
    trust_annotations=st.booleans(),
    hedge_after=st.none() | st.floats(0.01, 5) | st.just("adaptive"),
)


@given(policies)
def test_any_policy_survives_a_deep_copy_and_a_pickle(policy: RetryPolicy) -> None:
    for copied in (copy.deepcopy(policy), roundtrip(policy)):
        assert copied == policy and dict(copied.tools) == dict(policy.tools)


def _sink(tmp_path: Path) -> JsonLinesSink:
    return JsonLinesSink(tmp_path / "calls.jsonl")


LIVE = [
    pytest.param(lambda _: History(maxlen=7), id="History"),
    pytest.param(lambda _: RetryBudget(burst=5, per_success=0.5), id="RetryBudget"),
    pytest.param(lambda _: GrpcBudget(max_tokens=4), id="GrpcBudget"),
    pytest.param(lambda _: CircuitBreaker(failure_threshold=2), id="CircuitBreaker"),
    pytest.param(lambda _: LoggingHook(), id="LoggingHook"),
    pytest.param(_sink, id="JsonLinesSink"),
    pytest.param(lambda _: OpenTelemetryHook(), id="OpenTelemetryHook"),
    pytest.param(lambda _: RedisBudget(NOWHERE, name="copies", burst=3), id="RedisBudget"),
    pytest.param(
        lambda _: RedisCircuitBreaker(NOWHERE, name="copies", open_for=5), id="RedisCircuitBreaker"
    ),
]


@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize("make", LIVE)
def test_a_live_holder_copies_as_itself(
    make: Callable[[Path], Any], how: Callable[[Any], Any], tmp_path: Path
) -> None:
    value = make(tmp_path)
    assert how(value) is value
    assert how({"held": [value]})["held"][0] is value  # inside a container too


def test_a_copied_history_is_fed_by_the_transport_and_read_by_the_user() -> None:
    history = History()
    copied = copy.deepcopy({"history": history})["history"]
    transport = mcp_safe_retry.RetryTransport(httpx.MockTransport(_flaky), history=copied)
    with httpx.Client(transport=transport) as client:
        client.post("http://mcp.test/mcp", json=tool_call("lookup", 1))
    assert len(history) == 1


def test_a_pickle_of_a_dropped_holder_loads_as_a_fresh_one_with_its_settings() -> None:
    history, budget, breaker = History(maxlen=7), RetryBudget(burst=3), CircuitBreaker()
    history.append(_record())
    assert budget.allow_retry()
    breaker.record("k", failed=True, retry_after=None)
    blob = pickle.dumps((history, budget, breaker))
    del history, budget, breaker
    gc.collect()
    history, budget, breaker = pickle.loads(blob)
    again = pickle.loads(blob)
    assert again[0] is history and again[1] is budget and again[2] is breaker  # one per token
    assert len(history) == 0 and history.maxlen == 7
    assert budget.tokens == budget.burst == 3
    assert breaker.state("k") is CircuitState.CLOSED


_REPORT = """
import json, pickle, sys
(history, same_history, budget, grpc, breaker, log, sink, otel, rbudget, rbreaker) = (
    pickle.loads(sys.stdin.buffer.read())
)
print(json.dumps({
    "history": (type(history).__name__, len(history), history.maxlen, history is same_history),
    "budget": (type(budget).__name__, budget.tokens, budget.burst, budget.per_success),
    "grpc": (type(grpc).__name__, grpc.tokens, grpc.max_tokens, grpc.token_ratio),
    "breaker": (type(breaker).__name__, str(breaker.state("k")), breaker.settings.failure_threshold),
    "log": repr(log),
    "sink": (type(sink).__name__, sink.file.name),
    "otel": type(otel).__name__,
    "rbudget": (rbudget.name, rbudget.burst, rbudget.link.portable()),
    "rbreaker": (rbreaker.name, rbreaker.settings.open_for, rbreaker.link.portable()),
}))
"""


def test_in_another_process_a_holder_is_a_fresh_one_with_the_same_settings(
    tmp_path: Path,
) -> None:
    history, budget, breaker = History(maxlen=7), RetryBudget(burst=3), CircuitBreaker()
    history.append(_record())
    assert budget.allow_retry()
    for _ in range(5):
        breaker.record("k", failed=True, retry_after=None)
    assert breaker.state("k") is CircuitState.OPEN
    sink = _sink(tmp_path)
    values = (
        history,
        history,
        budget,
        GrpcBudget(max_tokens=4, token_ratio=0.5),
        breaker,
        LoggingHook(),
        sink,
        OpenTelemetryHook(),
        RedisBudget(NOWHERE, name="fleet", burst=9),
        RedisCircuitBreaker(NOWHERE, name="fleet", open_for=5),
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", _REPORT],
        input=pickle.dumps(values),
        capture_output=True,
        env=env,
        timeout=60,
        check=True,
    )
    assert json.loads(done.stdout) == {
        "history": ["History", 0, 7, True],  # empty there; one History for both references
        "budget": ["RetryBudget", 3.0, 3.0, 0.2],  # full there
        "grpc": ["GrpcBudget", 4.0, 4.0, 0.5],
        "breaker": ["CircuitBreaker", "closed", 5],  # closed there
        "log": "LoggingHook('mcp_safe_retry')",
        "sink": ["JsonLinesSink", str(tmp_path / "calls.jsonl")],  # the same file
        "otel": "OpenTelemetryHook",
        "rbudget": ["fleet", 9.0, NOWHERE],
        "rbreaker": ["fleet", 5.0, NOWHERE],
    }
    assert len(history) == 1 and budget.tokens == 2  # the parent's are untouched
    sink.close()


def test_a_sink_on_a_given_file_refuses_to_pickle_naming_why() -> None:
    sink = JsonLinesSink(io.StringIO())
    assert copy.deepcopy(sink) is sink
    with pytest.raises(TypeError, match="give JsonLinesSink a path"):
        pickle.dumps(sink)


def test_an_otel_hook_on_given_providers_refuses_to_pickle_naming_why() -> None:
    hook = OpenTelemetryHook(tracer_provider=TracerProvider())
    assert copy.deepcopy(hook) is hook
    with pytest.raises(TypeError, match="build the hook there"):
        pickle.dumps(hook)


def test_a_redis_client_that_cannot_travel_is_named() -> None:
    client = redis.Redis(host="127.0.0.1", port=9, redis_connect_func=lambda c: None)
    budget = RedisBudget(client, name="x")
    assert copy.deepcopy(budget) is budget
    with pytest.raises(TypeError, match="redis_connect_func"):
        pickle.dumps(budget)


def test_redis_holders_built_from_a_client_pickle_by_its_settings(
    redis_server: RedisServer,
) -> None:
    client = redis.Redis(host="127.0.0.1", port=redis_server.port, db=3, socket_timeout=1)
    budget = RedisBudget(client, name="by-client", burst=3)
    breaker = RedisCircuitBreaker(client, name="by-client", failure_threshold=1)
    assert budget.allow_retry() and budget.allow_retry()
    breaker.record("server", failed=True)
    breaker.refresh()
    blob = pickle.dumps((budget, breaker))
    assert pickle.loads(blob) == (budget, breaker)  # this process: the same objects
    budget.close()
    breaker.close()
    del budget, breaker
    gc.collect()
    budget, breaker = pickle.loads(blob)  # as another process would: new clients
    try:
        rebuilt = budget.link.client
        assert rebuilt is not client
        assert rebuilt.connection_pool.connection_kwargs["db"] == 3
        assert budget.tokens == 1.0  # the count the first one left in Redis
        breaker.allow("server")  # asks about it from now on
        breaker.refresh()
        assert breaker.state("server") is CircuitState.OPEN  # as the first one left it
    finally:
        budget.close()
        breaker.close()
        rebuilt.close()
        client.close()


# -- the factory, as frameworks hold it ---------------------------------------------------


def _flaky(request: httpx.Request | httpx2.Request) -> Any:
    """503 for the caller's id 1, 200 for a retry (the engine re-sends under a fresh id)."""
    body = json.loads(request.content)
    http = httpx2 if isinstance(request, httpx2.Request) else httpx
    if body["id"] == 1:
        return http.Response(503)
    return http.Response(200, json=ok_result(body["id"]))


def _record() -> Any:
    history = History()
    transport = mcp_safe_retry.RetryTransport(httpx.MockTransport(_flaky), history=history)
    with httpx.Client(transport=transport) as client:
        client.post("http://mcp.test/mcp", json=tool_call("lookup", 2))
    return history.last()


FLAVOURS = [
    pytest.param(mcp_safe_retry.mcp_client, httpx.MockTransport, id="httpx"),
    pytest.param(mcp_safe_retry.httpx2.mcp_client, httpx2.MockTransport, id="httpx2"),
]


@pytest.mark.anyio
@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize(("mcp_client", "mock"), FLAVOURS)
async def test_a_copied_factory_builds_clients_that_feed_the_users_holders(
    mcp_client: Callable[..., Any],
    mock: Callable[[Any], Any],
    how: Callable[[Any], Any],
    tmp_path: Path,
) -> None:
    history, budget, breaker = History(), RetryBudget(burst=5), CircuitBreaker()
    sink = _sink(tmp_path)
    factory = functools.partial(
        mcp_client,
        policy=RetryPolicy(tools={"lookup": "read"}, initial_backoff=0.001),
        history=history,
        budget=budget,
        breaker=breaker,
        hooks=[LoggingHook(), sink, OpenTelemetryHook()],
        transport=mock(_flaky),
    )
    built = how(factory)
    async with built(headers={"X-From": "framework"}) as client:
        response = await client.post("http://mcp.test/mcp", json=tool_call("lookup", 1))
    assert response.status_code == 200
    (record,) = history.records()
    assert record.http_statuses == (503, 200)
    assert budget.tokens == 4.2  # one retry spent, one success paid back
    sink.close()
    (line,) = (tmp_path / "calls.jsonl").read_text().splitlines()
    assert json.loads(line)["httpStatuses"] == [503, 200]
