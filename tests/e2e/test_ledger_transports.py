"""The call ledger (issue 27) end to end under every retry transport, without an SDK: httpx
and httpx2, sync and async, with and without ``contain_failures``, posting 2026-07-28
``tools/call`` requests to a stateless kitchen on 127.0.0.1.

An UNSAFE ``charge`` that may have run, or is still running, is not sent again by another
client of the process (the process's own ledger, emptied before each test by the suite's
fixture), nor by the same client while it is in flight; what is never held (READ calls,
other arguments, other servers, a twin that was answered) is sent as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from mcp_safe_retry import RetryPolicy, allow_duplicate
from mcp_safe_retry.kitchen import KitchenServer
from tests.e2e.ledger_support import (
    ABORT_AFTER,
    FLAVOURS,
    GIVE_UP_S,
    SLOW,
    SLOW_S,
    TIMEOUT,
    Answer,
    Stack,
    assert_ran,
    charged,
    duplicate_of,
    is_held,
    outcome_of,
    own_ledger,
    wait_for_runs,
)

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
ASYNC_FLAVOURS = tuple(f for f in FLAVOURS if f.endswith("-async"))
CHARGE = {"key": "k", "amount": 5}
contained = pytest.mark.parametrize("contain", [True, False], ids=["contained", "raised"])
flavours = pytest.mark.parametrize("flavour", FLAVOURS)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def kitchen() -> Iterator[KitchenServer]:
    """A stateless kitchen answering JSON: 2026-07-28 calls need no handshake."""
    with KitchenServer(stateless=True, json_response=True) as server:
        yield server


def assert_held(answer: Answer, outcome: str, first_id: int | str) -> dict[str, Any]:
    """``answer`` is a held call with ``outcome`` naming the first call (``first_id``)."""
    assert is_held(answer), answer
    assert outcome_of(answer) == outcome, answer
    named = duplicate_of(answer)
    assert named["requestId"] == first_id, named
    if isinstance(answer, dict):  # contained: the message names the first call too
        message = answer["error"]["message"]
        assert "not sent" in message and f"(request id {first_id!r})" in message, message
    return named


@flavours
@contained
async def test_a_new_client_per_call_is_held(
    kitchen: KitchenServer, flavour: str, contain: bool
) -> None:
    """Case 1: the charge ran and its connection dropped; a new client of the same process
    (a framework's per-call session) sends it again: held, run once."""
    url = kitchen.url_for(*ABORT_AFTER)
    first, second = Stack(flavour, contain=contain), Stack(flavour, contain=contain)
    try:
        with anyio.fail_after(TIMEOUT):
            dropped = await first.call(url, 7, CHARGE)
            held = await second.call(url, 1, CHARGE)
    finally:
        await first.aclose()
        await second.aclose()
    assert_ran(kitchen, url, "k")
    assert outcome_of(dropped) == "NETWORK_ERROR"
    named = assert_held(held, "DUPLICATE_HELD", 7)
    assert named["delivery"] == "may_have_run"
    (record,) = second.history.records()
    assert record.post_count == 0 and str(record.retry_origin) == "application"


@pytest.mark.parametrize(
    ("one", "other"), [("httpx-async", "httpx2-sync"), ("httpx2-async", "httpx-sync")]
)
async def test_both_http_libraries_share_the_process_ledger(
    kitchen: KitchenServer, one: str, other: str
) -> None:
    """Case 1 across flavours: a charge that may have run under an httpx transport is held
    under an httpx2 one of the same process (and the other way round)."""
    url = kitchen.url_for(*ABORT_AFTER)
    first, second = Stack(one, contain=True), Stack(other, contain=True)
    try:
        with anyio.fail_after(TIMEOUT):
            dropped = await first.call(url, 1, CHARGE)
            held = await second.call(url, 2, CHARGE)
    finally:
        await first.aclose()
        await second.aclose()
    assert_ran(kitchen, url, "k")
    assert outcome_of(dropped) == "NETWORK_ERROR"
    assert_held(held, "DUPLICATE_HELD", 1)


@flavours
@contained
async def test_a_retry_while_the_first_still_runs_is_held_in_flight(
    kitchen: KitchenServer, flavour: str, contain: bool
) -> None:
    """Case 2: the caller stopped waiting for a slow charge (its request still open) and
    retries from a fresh client: not sent (``DUPLICATE_IN_FLIGHT``), run once."""
    url = kitchen.url_for(*SLOW)
    first, retry = Stack(flavour, contain=contain), Stack(flavour, contain=contain)
    answers: dict[str, Answer] = {}

    async def call_first() -> None:
        answers["first"] = await first.call(url, 1, CHARGE)

    try:
        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(call_first)
                await anyio.sleep(GIVE_UP_S)  # the caller's timeout: it stops waiting
                answers["retry"] = await retry.call(url, 2, CHARGE)
    finally:
        await first.aclose()
        await retry.aclose()
    assert_ran(kitchen, url, "k")
    named = assert_held(answers["retry"], "DUPLICATE_IN_FLIGHT", 1)
    assert named["state"] == "in_flight"
    assert charged(answers["first"])["execution"] == 1  # the first call's own answer


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("flavour", ASYNC_FLAVOURS)
@contained
async def test_a_call_its_caller_cancelled_stays_held(
    kitchen: KitchenServer, flavour: str, contain: bool
) -> None:
    """Case 2, the caller's timeout cancelling the request: the charge still runs on the
    server; the retry before it runs and the one after are both held: run once."""
    url = kitchen.url_for(*SLOW)
    stacks = [Stack(flavour, contain=contain) for _ in range(3)]
    try:
        with anyio.fail_after(TIMEOUT):
            with anyio.move_on_after(GIVE_UP_S) as timeout:
                await stacks[0].call(url, 1, CHARGE)
            assert timeout.cancelled_caught
            early = await stacks[1].call(url, 2, CHARGE)
            await wait_for_runs(kitchen, url, "k", 1)
            await anyio.sleep(0.1)  # the kitchen answers a socket nobody reads
            late = await stacks[2].call(url, 3, CHARGE)
    finally:
        for stack in stacks:
            await stack.aclose()
    assert_ran(kitchen, url, "k")
    for answer in (early, late):
        assert is_held(answer), answer
        assert duplicate_of(answer)["requestId"] == 1


@flavours
@contained
async def test_concurrent_twins_over_one_client(
    kitchen: KitchenServer, flavour: str, contain: bool
) -> None:
    """Case 4: two identical charges at once over one client while the first is slow: the
    second is not sent (``DUPLICATE_IN_FLIGHT``), the first answers, run once. The twin's
    re-send afterwards joins that answer (the twin said its caller may have stopped
    waiting); joined once, the call is forgotten: the next one is sent (and runs)."""
    url = kitchen.url_for(*SLOW)
    stack = Stack(flavour, contain=contain, ledger=own_ledger())
    answers: dict[int, Answer] = {}

    async def call(request_id: int) -> None:
        answers[request_id] = await stack.call(url, request_id, CHARGE)

    try:
        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(call, 1)
                await anyio.sleep(GIVE_UP_S)
                tasks.start_soon(call, 2)
            assert_ran(kitchen, url, "k")
            joined = await stack.call(url, 3, CHARGE)
            afterwards = await stack.call(url, 4, CHARGE)
    finally:
        await stack.aclose()
    assert_ran(kitchen, url, "k", 2)
    assert charged(answers[1])["chargeId"] == "ch_k_1"
    assert_held(answers[2], "DUPLICATE_IN_FLIGHT", 1)
    assert charged(joined)["chargeId"] == "ch_k_1"  # the first call's answer, its own id
    assert charged(afterwards)["chargeId"] == "ch_k_2"
    records = sorted(stack.history.records(), key=lambda r: str(r.request_id))
    _, second, third, fourth = records
    assert [r.post_count for r in records] == [1, 0, 0, 1]
    assert str(second.retry_origin) == "application" and fourth.duplicate_of is None
    assert third.duplicate_of is not None and str(third.duplicate_of.verdict) == "joined"


@flavours
@pytest.mark.parametrize("mode", ["allow_duplicate", "label", "off"])
async def test_consent_or_the_policy_sends_an_in_flight_twin(
    kitchen: KitchenServer, flavour: str, mode: str
) -> None:
    """``allow_duplicate()`` around the twin, or ``duplicate_guard="label"`` / ``"off"``:
    the twin of a call in flight is sent, as today (labelled, except with "off")."""
    url = kitchen.url_for(*SLOW)
    guard = "hold" if mode == "allow_duplicate" else mode
    policy = RetryPolicy(duplicate_guard=guard)
    stack = Stack(flavour, contain=True, ledger=own_ledger(), policy=policy)
    answers: dict[int, Answer] = {}

    async def call(request_id: int) -> None:
        if request_id == 2 and mode == "allow_duplicate":
            with allow_duplicate():
                answers[request_id] = await stack.call(url, request_id, CHARGE)
        else:
            answers[request_id] = await stack.call(url, request_id, CHARGE)

    try:
        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(call, 1)
                await anyio.sleep(GIVE_UP_S)
                tasks.start_soon(call, 2)
    finally:
        await stack.aclose()
    assert_ran(kitchen, url, "k", 2)
    assert sorted(charged(a)["execution"] for a in answers.values()) == [1, 2]
    twin = next(r for r in stack.history.records() if r.request_id == 2)
    verdict = {"allow_duplicate": "allowed", "label": "labelled", "off": None}[mode]
    assert (twin.duplicate_of and str(twin.duplicate_of.verdict)) == verdict, twin.to_dict()
    if twin.duplicate_of is not None:
        assert twin.duplicate_of.earlier.request_id == 1


@flavours
async def test_twins_answered_one_after_another_both_run(
    kitchen: KitchenServer, flavour: str
) -> None:
    """What is never held: an identical UNSAFE call after its twin was answered."""
    url = kitchen.url_for("baseline")
    stack, other = Stack(flavour, contain=True), Stack(flavour, contain=True)
    try:
        with anyio.fail_after(TIMEOUT):
            answers = [await stack.call(url, 1, CHARGE), await stack.call(url, 2, CHARGE)]
            answers.append(await other.call(url, 1, CHARGE))  # another client, answered twin
    finally:
        await stack.aclose()
        await other.aclose()
    assert_ran(kitchen, url, "k", 3)
    assert [charged(a)["execution"] for a in answers] == [1, 2, 3]


@flavours
async def test_reads_and_other_arguments_in_flight_are_sent(
    kitchen: KitchenServer, flavour: str
) -> None:
    """What is never held: a READ twin in flight; an UNSAFE call with other arguments while
    a slow one is in flight (a kitchen run that delays every tools/call)."""
    url = kitchen.url_for("baseline", {"delayMs": int(SLOW_S * 1000)})
    stack = Stack(flavour, contain=True, ledger=own_ledger())
    answers: dict[int, Answer] = {}
    calls = {
        1: ("charge", CHARGE),
        2: ("charge", {"key": "k", "amount": 6}),
        3: ("charge", {"key": "other", "amount": 5}),
        4: ("lookup", {"key": "r"}),
        5: ("lookup", {"key": "r"}),
    }

    async def call(request_id: int) -> None:
        tool, arguments = calls[request_id]
        answers[request_id] = await stack.call(url, request_id, arguments, tool=tool)

    try:
        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tasks:
                for request_id in calls:
                    tasks.start_soon(call, request_id)
                    await anyio.sleep(0.05)
    finally:
        await stack.aclose()
    state = kitchen.state_of(url)
    assert state.executions_by_key["charge"] == {"k": 2, "other": 1}
    assert state.executions_by_key["lookup"] == {"r": 2}
    assert all(outcome_of(a) is None for a in answers.values()), answers


@flavours
async def test_another_server_is_not_held(kitchen: KitchenServer, flavour: str) -> None:
    """What is never held: the same call to another server (another port) after the first
    may have run."""
    with KitchenServer(stateless=True, json_response=True) as elsewhere:
        url, other_url = kitchen.url_for(*ABORT_AFTER), elsewhere.url_for("baseline")
        stack = Stack(flavour, contain=True, ledger=own_ledger())
        try:
            with anyio.fail_after(TIMEOUT):
                dropped = await stack.call(url, 1, CHARGE)
                sent = await stack.call(other_url, 2, CHARGE)
        finally:
            await stack.aclose()
        assert_ran(elsewhere, other_url, "k")
    assert_ran(kitchen, url, "k")
    assert outcome_of(dropped) == "NETWORK_ERROR"
    assert charged(sent)["execution"] == 1


@pytest.mark.parametrize("flavour", ["httpx-async", "httpx2-sync"])
async def test_an_explicit_ledger_shares_or_isolates(kitchen: KitchenServer, flavour: str) -> None:
    """``ledger=``: two clients given one ``CallLedger()`` share it (the re-send is held);
    clients given ledgers of their own do not (it is sent and runs again)."""
    shared = own_ledger()
    url = kitchen.url_for(*ABORT_AFTER)
    stacks = [Stack(flavour, contain=True, ledger=shared) for _ in range(2)]
    stacks += [Stack(flavour, contain=True, ledger=own_ledger()) for _ in range(2)]
    try:
        with anyio.fail_after(TIMEOUT):
            answers = [await stack.call(url, n, CHARGE) for n, stack in enumerate(stacks)]
    finally:
        for stack in stacks:
            await stack.aclose()
    # The shared pair: the drop, then held. Each isolated one: sent, and answered.
    assert_ran(kitchen, url, "k", 3)
    assert [outcome_of(a) for a in answers] == [
        "NETWORK_ERROR",
        "DUPLICATE_HELD",
        None,
        None,
    ]
