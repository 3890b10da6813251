"""The process's call ledger (shared/ledgers.py): one per process, shared by every
transport, never copied, a fresh lock in a forked child; and a person's review of it."""

from __future__ import annotations

import copy
import json
import os
import pickle
import threading

import httpx
import pytest

from mcp_safe_retry import CallLedger, RetryPolicy, RetryTransport
from mcp_safe_retry.core.delivery import Delivery
from mcp_safe_retry.core.duplicate import EarlierCall, LedgerState
from mcp_safe_retry.shared.ledgers import process_ledger, process_name

S, D = "http://a.test/mcp", "d" * 64


def _call(owner: str = "me", state: LedgerState = LedgerState.IN_FLIGHT) -> EarlierCall:
    return EarlierCall(1, 1_800_000_000.0, Delivery.MAY_HAVE_RUN, "", state=state, owner=owner)


def test_every_transport_uses_the_process_ledger_unless_given_one() -> None:
    default = RetryTransport(httpx.MockTransport(lambda r: httpx.Response(200)))
    assert default.engine.guard.ledger is process_ledger()
    own = CallLedger()
    given = RetryTransport(httpx.MockTransport(lambda r: httpx.Response(200)), ledger=own)
    assert given.engine.guard.ledger is own
    with pytest.raises(TypeError, match="ledger must be a call ledger such as CallLedger"):
        RetryTransport(ledger={})  # type: ignore[arg-type]


def test_shared_never_copied_and_pickled_as_the_process_s_own() -> None:
    own = CallLedger()
    assert copy.deepcopy(own) is own and copy.copy(own) is own
    assert pickle.loads(pickle.dumps(process_ledger())) is process_ledger()
    loaded = pickle.loads(pickle.dumps(own))
    assert isinstance(loaded, CallLedger) and loaded is not own and len(loaded) == 0
    settings = {"ledger": own, "also": [process_ledger()]}  # as a framework copies its config
    copied = copy.deepcopy(settings)
    assert copied["ledger"] is own and copied["also"][0] is process_ledger()


def test_a_claim_is_atomic_across_threads() -> None:
    ledger, won = CallLedger(), []
    start = threading.Barrier(8)

    def claim(n: int) -> None:
        start.wait()
        found, _ = ledger.claim(S, D, _call(f"t{n}"), 600.0, 0.0)
        if found is None:
            won.append(n)

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert len(won) == 1


def test_in_doubt_and_a_persons_verdict() -> None:
    ledger = CallLedger(clock=lambda: 10.0)
    ledger.claim(S, D, _call(), 600.0, 0.0)
    (entry,) = ledger.in_doubt()
    assert (entry.server, entry.digest, entry.expires_in) == (S, D, 590.0)
    assert entry.to_dict()["state"] == "in_flight" and "arguments" not in entry.to_dict()
    assert ledger.resolve(S, D, ran=True) and ledger.in_doubt() == []
    assert ledger.look(S, D, 11.0).state is LedgerState.RAN  # type: ignore[union-attr]
    assert ledger.resolve(S, D, ran=False) and ledger.look(S, D, 11.0) is None
    assert not ledger.resolve(S, D, ran=False)  # nothing kept: nothing to resolve
    with pytest.raises(TypeError, match="ran must be True or False"):
        ledger.resolve(S, D, ran="yes")  # type: ignore[arg-type]
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="capacity must be a positive int"):
            CallLedger(bad)  # type: ignore[arg-type]


def test_only_its_own_claim_is_forgotten_by_an_answer() -> None:
    ledger = CallLedger()
    ledger.claim(S, D, _call("first"), 600.0, 0.0)
    ledger.settle(S, D, "someone else", None, window=600.0, now=1.0)
    assert ledger.look(S, D, 1.0) is not None
    ledger.settle(S, D, "first", None, window=600.0, now=1.0)
    assert ledger.look(S, D, 1.0) is None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_forked_child_gets_a_fresh_lock_and_its_own_name() -> None:
    ledger = CallLedger()
    ledger.claim(S, D, _call(), 600.0, 0.0)
    read, write = os.pipe()
    with ledger._lock:  # held by this thread as the process forks
        pid = os.fork()
        if pid == 0:  # the child: the parent's call is kept; the lock is free
            try:
                found, _ = ledger.claim(S, D, _call("child"), 600.0, 0.0)
                ok = found is not None and process_name().endswith(f":{os.getpid()}")
                os.write(write, b"1" if ok else b"0")
            finally:
                os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1" and status == 0


class _Running:
    def gave_up(self) -> None:
        pass


def test_a_call_still_in_flight_in_this_process_outlives_its_window() -> None:
    ledger, running = CallLedger(), _Running()
    ledger.claim(S, D, _call("slow"), 0.5, 0.0)
    ledger.live("slow", running)
    assert ledger.look(S, D, 0.8) is not None  # past its window, still running: kept
    ledger.live("slow", None)  # it ended without a settle (a transport dropped mid-call)
    assert ledger.look(S, D, 2.0) is None  # now its window runs out


def test_an_empty_ledger_is_still_a_ledger_and_a_partial_one_is_refused_by_name() -> None:
    assert bool(CallLedger()) and len(CallLedger()) == 0  # ``ledger or default`` keeps it

    class OnlyClaims:
        def claim(self, *args: object) -> None: ...

    with pytest.raises(TypeError, match=r"no put, settle, look, live"):
        RetryTransport(ledger=OnlyClaims())  # type: ignore[arg-type]


def test_a_guarded_calls_record_names_the_ledger_that_decided() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        sent = json.loads(request.content)
        result = {"content": []}
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": sent["id"], "result": result})

    policy = RetryPolicy(tools={"lookup": "read"})
    transport = RetryTransport(httpx.MockTransport(answer), policy=policy)
    with httpx.Client(transport=transport) as http:
        for tool in ("charge", "lookup"):
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool}}
            http.post("http://a.test/mcp", json=body)
    charge, lookup = transport.history.records()
    assert charge.ledger == "process" and charge.to_dict()["ledger"] == "process"
    assert lookup.ledger is None  # a READ call never reaches the ledger
