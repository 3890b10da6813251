"""Hedged reads with a circuit breaker and a shared retry budget (httpx and httpx2, asyncio
and trio): the first copy is admitted as any call's first POST, each hedge asks the budget
and then the breaker as a retry would (the shell awaits them when they are shared), and every
copy that met its own answer is counted once by both; a loser by neither.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from mcp_safe_retry import CircuitBreaker, CircuitOpenError, Idempotency, RetryPolicy, get_record
from mcp_safe_retry import CircuitOpenError as CircuitOpenError2
from mcp_safe_retry.core.attempt_kinds import AttemptKind
from mcp_safe_retry.core.budget import RetryBudget
from mcp_safe_retry.core.outcomes import Outcome
from mcp_safe_retry.core.servers import server_key
from mcp_safe_retry.redis import RedisBudget
from tests.helpers import tool_call
from tests.redis_support import RedisServer
from tests.shells.test_race_httpx_async import (
    LIBRARIES,
    READ,
    RETRYING,
    URL,
    call,
    inner_of,
    ok,
    parsed,
    unavailable,
)

pytestmark = pytest.mark.anyio

KEY = server_key(URL)
FAIL_TWICE = ((0.05, unavailable), (0.05, unavailable), (0.0, ok))  # the first copy, a hedge
RACING = RetryPolicy(tools={"lookup": Idempotency.READ}, hedge_after=0.02, max_hedges=3)


class AskedBreaker(CircuitBreaker):
    """Not this process's own kind of breaker (the shell is asked to consult it, as it would
    a RedisCircuitBreaker); it notes how it was asked and what it was told."""

    answers_inline = False  # asked through the shell, as a shared one is

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.asks: list[str] = []
        self.records: list[bool] = []

    def allow(self, key: str) -> bool:
        self.asks.append("allow")
        return super().allow(key)

    async def allow_async(self, key: str) -> bool:
        self.asks.append("allow_async")
        return CircuitBreaker.allow(self, key)

    def record(
        self, key: str, *, failed: bool, retry_after: float | None = None, ends_call: bool = True
    ) -> None:
        self.records.append(failed)
        super().record(key, failed=failed, retry_after=retry_after, ends_call=ends_call)


class AskedBudget(RetryBudget):
    """A budget the shells consult through ``Ask`` (as they would a shared one); it
    notes how it was asked and what it was told."""

    answers_inline = False  # asked through the shell, as a shared one is

    def __init__(self, allow: bool = True) -> None:
        super().__init__()
        self.allow = allow
        self.asks: list[str] = []
        self.records: list[bool] = []

    def allow_retry(self) -> bool:
        self.asks.append("allow_retry")
        return self.allow

    async def allow_retry_async(self) -> bool:
        self.asks.append("allow_retry_async")
        return self.allow

    def record(self, *, failed: bool) -> None:
        self.records.append(failed)
        super().record(failed=failed)


BREAKERS = [
    pytest.param(CircuitBreaker, id="own"),
    pytest.param(AskedBreaker, id="asked"),
]


def opened(kind: type[CircuitBreaker]) -> CircuitBreaker:
    breaker = kind(failure_threshold=1)
    breaker.record(KEY, failed=True)
    return breaker


@pytest.mark.parametrize("contain", [False, True], ids=["raised", "contained"])
@pytest.mark.parametrize("kind", BREAKERS)
@pytest.mark.parametrize("lib", LIBRARIES)
async def test_an_open_circuit_sends_no_copy_of_a_hedged_read(
    lib: tuple[Any, Any], kind: type[CircuitBreaker], contain: bool
) -> None:
    library, shell = lib
    inner = inner_of(library, (0.2, ok))
    breaker = opened(kind)
    transport = shell(inner, policy=READ, breaker=breaker, contain_failures=contain)
    error = CircuitOpenError if library is httpx else CircuitOpenError2
    async with library.AsyncClient(transport=transport) as client:
        if contain:
            response = await client.post(URL, json=tool_call("lookup", 7))
            body = json.loads(await response.aread())
            assert body["id"] == 7 and body["error"]["data"]["outcome"] == "CIRCUIT_OPEN"
            record = get_record(response)
        else:
            with pytest.raises(error) as info:
                await client.post(URL, json=tool_call("lookup", 7))
            record = get_record(info.value)
    assert inner.calls == [] and inner.open == 0
    assert record is not None and record.classification is not None
    assert record.classification.outcome is Outcome.CIRCUIT_OPEN and record.post_count == 0
    assert [a.kind for a in record.attempts] == [AttemptKind.HELD]
    if isinstance(breaker, AskedBreaker):
        assert breaker.asks == ["allow_async"]  # awaited by the shell, never asked inline


@pytest.mark.parametrize("kind", [*BREAKERS, pytest.param(None, id="none")])
@pytest.mark.parametrize("lib", LIBRARIES)
async def test_a_circuit_opening_during_the_race_stops_further_hedges(
    lib: tuple[Any, Any], kind: type[CircuitBreaker] | None
) -> None:
    library, shell = lib
    # The first copy answers late; every hedge fails at once.
    inner = inner_of(library, (0.3, ok), (0.0, unavailable))
    breaker = None if kind is None else kind(failure_threshold=1)
    transport = shell(inner, policy=RACING, breaker=breaker)
    async with library.AsyncClient(transport=transport) as client:
        response = await client.post(URL, json=tool_call("lookup", 7))
        body = parsed(response.headers["content-type"], await response.aread())
    assert body["id"] == 7 and "result" in body and inner.open == 0
    record = get_record(response)
    assert record is not None
    if breaker is None:  # without a breaker, every hedge is sent
        assert len(inner.calls) == 1 + RACING.max_hedges
        return
    # The first hedge's 503 opened the circuit: the next hedge was held, none followed.
    assert len(inner.calls) == 2
    assert [a.fate for a in record.attempts] == ["won", "failed"]
    if isinstance(breaker, AskedBreaker):
        assert breaker.asks == ["allow_async"] * 3  # the first copy, a hedge, a refused hedge
        assert breaker.records == [True, False]  # the hedge's 503, the first copy's answer


@pytest.mark.parametrize("allow", [True, False], ids=["allowed", "refused"])
@pytest.mark.parametrize("lib", LIBRARIES)
async def test_a_shared_budget_is_awaited_for_each_hedge(lib: tuple[Any, Any], allow: bool) -> None:
    library, shell = lib
    budget = AskedBudget(allow)
    inner = inner_of(library, (0.2, ok))
    transport = shell(inner, policy=READ, budget=budget)
    async with library.AsyncClient(transport=transport) as client:
        response = await client.post(URL, json=tool_call("lookup", 7))
        body = parsed(response.headers["content-type"], await response.aread())
    assert body["id"] == 7 and "result" in body and inner.open == 0
    assert budget.asks == ["allow_retry_async"]
    # A refused hedge only means no hedge: the first copy's answer is the call's.
    assert len(inner.calls) == (2 if allow else 1)
    assert budget.records == [False]  # the winner only: the loser is counted by neither


class StalledBudget(RetryBudget):
    """A shared budget whose answer never comes."""

    answers_inline = False  # asked through the shell, as a shared one is

    async def allow_retry_async(self) -> bool:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_an_answer_does_not_wait_for_the_budget_asked_about_a_hedge(
    lib: tuple[Any, Any],
) -> None:
    library, shell = lib
    inner = inner_of(library, (0.2, ok))
    transport = shell(inner, policy=READ, budget=StalledBudget())
    async with library.AsyncClient(transport=transport) as client:
        with anyio.fail_after(5):
            response = await client.post(URL, json=tool_call("lookup", 7))
        body = parsed(response.headers["content-type"], await response.aread())
    assert body["id"] == 7 and "result" in body
    assert len(inner.calls) == 1 and inner.open == 0


@pytest.mark.parametrize(
    ("plan", "counted"),
    [
        pytest.param([(0.3, ok), (0.0, ok)], [False], id="hedge-wins"),
        pytest.param([(0.3, ok), (0.0, unavailable)], [True, False], id="hedge-fails"),
    ],
)
@pytest.mark.parametrize("lib", LIBRARIES)
async def test_each_copy_that_met_its_answer_is_counted_once(
    lib: tuple[Any, Any], plan: list[Any], counted: list[bool]
) -> None:
    library, shell = lib
    policy = RetryPolicy(tools={"lookup": Idempotency.READ}, hedge_after=0.02, max_hedges=1)
    breaker = AskedBreaker()
    budget = AskedBudget()
    inner = inner_of(library, *plan)
    transport = shell(inner, policy=policy, breaker=breaker, budget=budget)
    async with library.AsyncClient(transport=transport) as client:
        response = await client.post(URL, json=tool_call("lookup", 7))
        await response.aread()
    assert breaker.records == counted and budget.records == counted
    assert len(inner.calls) == len(plan) and inner.open == 0


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_every_copy_failing_asks_a_shared_budget_and_breaker_for_the_retry(
    lib: tuple[Any, Any],
) -> None:
    breaker = AskedBreaker()
    budget = AskedBudget()
    _, inner, body = await call(lib, *FAIL_TWICE, policy=RETRYING, breaker=breaker, budget=budget)
    assert body["id"] == 7 and "result" in body and inner.open == 0
    assert len(inner.calls) == 3
    # The hedge and the retry each asked the budget, then the breaker, through the shell.
    assert budget.asks == ["allow_retry_async"] * 2 and "allow_retry" not in budget.asks
    assert breaker.asks == ["allow_async"] * 3
    assert breaker.records == budget.records == [True, True, False]


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_a_shared_budget_refusing_the_retry_hands_the_last_failure_on(
    lib: tuple[Any, Any],
) -> None:
    library, shell = lib
    budget = AskedBudget(allow=False)
    inner = inner_of(library, (0.05, unavailable))
    transport = shell(inner, policy=RETRYING, budget=budget)
    async with library.AsyncClient(transport=transport) as client:
        response = await client.post(URL, json=tool_call("lookup", 7))
        assert await response.aread() == b"busy"
    # No hedge, no retry: the budget said no to both, asked through the shell each time.
    assert response.status_code == 503 and len(inner.calls) == 1 and inner.open == 0
    assert budget.asks == ["allow_retry_async"] * 2 and budget.records == [True]


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_an_open_circuit_holds_the_retry_after_every_copy_failed(
    lib: tuple[Any, Any],
) -> None:
    library, shell = lib
    breaker = CircuitBreaker(failure_threshold=2)
    inner = inner_of(library, *FAIL_TWICE)
    transport = shell(inner, policy=RETRYING, breaker=breaker)
    error = CircuitOpenError if library is httpx else CircuitOpenError2
    async with library.AsyncClient(transport=transport) as client:
        with pytest.raises(error) as info:
            await client.post(URL, json=tool_call("lookup", 7))
    record = get_record(info.value)
    assert len(inner.calls) == 2 and inner.open == 0
    assert record is not None and record.classification is not None
    assert record.classification.outcome is Outcome.CIRCUIT_OPEN
    assert record.attempts[-1].kind == AttemptKind.HELD


@pytest.mark.parametrize("lib", LIBRARIES)
async def test_a_redis_budget_spent_elsewhere_refuses_the_hedge(
    lib: tuple[Any, Any], redis_server: RedisServer
) -> None:
    library, shell = lib
    name = f"hedges-{library.__name__}"
    with (
        RedisBudget(redis_server.url, name=name, burst=1, per_success=0.01) as here,
        RedisBudget(redis_server.url, name=name, burst=1, per_success=0.01) as elsewhere,
    ):
        assert await elsewhere.allow_retry_async()  # another process spent the one token
        inner = inner_of(library, (0.2, ok))
        transport = shell(inner, policy=READ, budget=here)
        async with library.AsyncClient(transport=transport) as client:
            response = await client.post(URL, json=tool_call("lookup", 7))
            body = parsed(response.headers["content-type"], await response.aread())
        # Answered from this process's cache, the hedge would have gone: Redis said no.
        assert body["id"] == 7 and len(inner.calls) == 1 and inner.open == 0
