"""RedisCallLedger against a real redis-server: processes racing for one call, a worker killed
mid-call, Redis hung or killed (the local ledger decides within the bound), a person's
review, Redis losing calls, pickling and forking."""

from __future__ import annotations

import copy
import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from mcp_safe_retry import (
    AsyncRetryTransport,
    CallLedger,
    DuplicateCallError,
    RetryPolicy,
    RetryTransport,
    get_record,
)
from mcp_safe_retry.core.delivery import Delivery
from mcp_safe_retry.core.duplicate import EarlierCall, LedgerState
from mcp_safe_retry.redis import RedisCallLedger
from mcp_safe_retry.shared import ledger_store as store
from tests.redis_support import RedisServer
from tests.shared.common import name

ROOT = Path(__file__).resolve().parents[2]
S, D = "http://pay.test/mcp", "d" * 64
TIMEOUT = 0.25
SLACK = 0.5  # a loaded 2-core machine's scheduling, never near a second


def _call(owner: str, state: LedgerState = LedgerState.IN_FLIGHT, **more: Any) -> EarlierCall:
    return EarlierCall(1, time.time(), Delivery.MAY_HAVE_RUN, "", state=state, owner=owner, **more)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}


def _worker(*args: str, **kw: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.shared.ledger_worker", *args],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def _load_in_another_process(pickled: bytes) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "tests.shared.ledger_worker", "load"],
        cwd=ROOT,
        env=_env(),
        input=pickled,
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_two_processes_claim_the_same_calls_exactly_one_wins_each(
    redis_server: RedisServer, client: redis.Redis
) -> None:
    ledger_name, calls = name(), 200
    workers = [
        _worker("race", redis_server.url, ledger_name, str(calls), *order)
        for order in ([], ["reversed"])
    ]
    try:
        ready = [client.blpop([f"{ledger_name}:ready"], timeout=20) for _ in workers]
        for got in ready:  # both released together
            assert got is not None
            client.rpush(f"{ledger_name}:go:{got[1].decode()}", "go")
        outs = [json.loads(w.communicate(timeout=30)[0]) for w in workers]
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait(5)
    wins = [sum(won for _, won, _ in out) for out in outs]
    print(f"two processes, {calls} calls each: wins {wins}")
    for n in range(calls):
        assert outs[0][n][1] + outs[1][n][1] == 1, n  # exactly one sent each call
    assert {by for out in outs for _, _, by in out} == {"redis"}
    assert min(wins) > 0  # they met: each won some, lost the rest
    assert len(store.entries(client, ledger_name)) == calls


class _Pay(BaseHTTPRequestHandler):
    """A tool server: ``charge`` runs (counted) and answers once ``release`` is set."""

    protocol_version = "HTTP/1.1"
    charges = 0
    arrived = threading.Event()
    release = threading.Event()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        type(self).charges += 1
        type(self).arrived.set()
        type(self).release.wait(10)
        result = {"content": [{"type": "text", "text": "charged"}], "isError": False}
        out = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": result}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
        except OSError:
            pass  # its client was killed

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture
def pay() -> Iterator[str]:
    _Pay.charges = 0
    _Pay.arrived.clear()
    _Pay.release.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pay)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        _Pay.release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


def _charge(url: str, ledger: RedisCallLedger) -> httpx.Response | DuplicateCallError:
    policy = RetryPolicy(tools={"lookup": "read"})
    transport = RetryTransport(httpx.HTTPTransport(), policy=policy, ledger=ledger)
    body = {
        "jsonrpc": "2.0",
        "id": 8,
        "method": "tools/call",
        "params": {"name": "charge", "arguments": {"amount": 100}},
    }
    with httpx.Client(transport=transport) as http:
        try:
            return http.post(url, json=body, timeout=10)
        except DuplicateCallError as error:
            return error


def test_a_worker_killed_mid_call_leaves_it_held_for_another_process(
    redis_server: RedisServer, pay: str
) -> None:
    ledger_name = name()
    worker = _worker("charge", redis_server.url, ledger_name, pay)
    try:
        assert _Pay.arrived.wait(20), worker.stderr.read() if worker.stderr else ""
        os.kill(worker.pid, signal.SIGKILL)  # after its request left, before any answer
        worker.wait(5)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(5)
    _Pay.release.set()
    got = _charge(pay, RedisCallLedger(redis_server.url, name=ledger_name))
    assert isinstance(got, DuplicateCallError), got
    record = get_record(got)
    assert record is not None and record.duplicate_of is not None
    earlier = record.duplicate_of
    assert earlier.earlier.state is LedgerState.IN_FLIGHT
    assert earlier.earlier.owner.split(":")[1] == str(worker.pid)
    assert earlier.ledger == "redis"
    assert record.to_dict()["duplicateOf"]["ledger"] == "redis"
    assert _Pay.charges == 1  # the charge ran once


def test_a_call_answered_in_one_process_is_sent_again_by_another(
    redis_server: RedisServer, pay: str
) -> None:
    _Pay.release.set()
    ledger_name = name()
    first = _charge(pay, RedisCallLedger(redis_server.url, name=ledger_name))
    assert isinstance(first, httpx.Response) and first.status_code == 200
    again = _charge(pay, RedisCallLedger(redis_server.url, name=ledger_name))
    assert isinstance(again, httpx.Response) and _Pay.charges == 2
    with redis.Redis.from_url(redis_server.url) as client:
        assert store.entries(client, ledger_name) == []  # both forgotten when answered


@pytest.mark.parametrize("failure", ["pause", "kill"])
def test_redis_hung_or_dead_the_process_decides_within_the_bound(
    redis_server: RedisServer, failure: str
) -> None:
    ledger = RedisCallLedger(redis_server.url, name=name(), timeout=TIMEOUT, retry_interval=0.5)
    other = RedisCallLedger(redis_server.url, name=ledger.name)
    assert ledger.claim(S, "before", _call("p:1:1"), 600.0, time.monotonic()) == (None, "redis")
    ledger.settle(S, "before", "p:1:1", None, window=600.0, now=time.monotonic())
    redis_server.pause() if failure == "pause" else redis_server.kill()
    try:
        started = time.monotonic()
        found, decided_by = ledger.claim(S, D, _call("p:1:2"), 600.0, time.monotonic())
        first = time.monotonic() - started
        assert found is None
        assert decided_by.startswith("process (redis unreachable: ")
        started = time.monotonic()
        held, decided_by = ledger.claim(S, D, _call("p:1:3"), 600.0, time.monotonic())
        second = time.monotonic() - started
        assert held is not None and held.owner == "p:1:2"  # its own process still holds it
        assert decided_by.startswith("process (redis unreachable")
        ledger.settle(S, "x", "p:1:4", None, window=600.0, now=time.monotonic())
        assert ledger.in_doubt()[0].digest == D  # from the local copy
        print(f"Redis {failure}: first claim {first * 1000:.0f} ms, next {second * 1000:.2f} ms")
        assert first < TIMEOUT + SLACK
        assert second < 0.05  # no second wait: the link is down for retry_interval
    finally:
        redis_server.resume() if failure == "pause" else redis_server.start()
    time.sleep(0.6)  # past retry_interval: Redis is asked again
    ledger.flush()  # what was written during the outage reaches Redis (a restarted one too)
    found, decided_by = other.claim(S, D, _call("q:1:1"), 600.0, time.monotonic())
    assert decided_by == "redis" and found is not None and found.owner == "p:1:2"


def test_a_persons_review_from_another_process(redis_server: RedisServer) -> None:
    sender = RedisCallLedger(redis_server.url, name=name())
    reviewer = RedisCallLedger(redis_server.url, name=sender.name)
    sender.claim(S, D, _call("p:1:1", tool="charge"), 600.0, time.monotonic())
    ended = _call("p:1:1", LedgerState.MAY_HAVE_RUN, tool="charge")
    sender.settle(S, D, "p:1:1", ended, window=600.0, now=time.monotonic())
    (entry,) = reviewer.in_doubt()
    assert (entry.server, entry.digest, entry.call.tool) == (S, D, "charge")
    assert entry.call.state is LedgerState.MAY_HAVE_RUN and 590 < entry.expires_in <= 600
    assert reviewer.resolve(S, D, ran=True)
    assert reviewer.in_doubt() == [] and len(reviewer) == 1  # kept, no longer in doubt
    found, _ = sender.claim(S, D, _call("p:1:2"), 600.0, time.monotonic())
    assert found is not None and found.state is LedgerState.RAN
    assert reviewer.resolve(S, D, ran=False)
    assert not reviewer.resolve(S, D, ran=False)  # nothing left
    # The sender's own copy still said may-have-run: the marker tells it a person cleared it.
    assert sender.claim(S, D, _call("p:1:3"), 600.0, time.monotonic()) == (None, "redis")
    with pytest.raises(TypeError, match="ran must be True or False"):
        reviewer.resolve(S, D, ran=1)  # type: ignore[arg-type]


def test_a_call_redis_lost_is_held_by_its_process_and_written_back(
    redis_server: RedisServer, client: redis.Redis
) -> None:
    ledger = RedisCallLedger(redis_server.url, name=name())
    ledger.claim(S, D, _call("p:1:1"), 600.0, time.monotonic())
    client.flushall()  # a restart without persistence
    found, decided_by = ledger.claim(S, D, _call("p:1:2"), 600.0, time.monotonic())
    assert found is not None and found.owner == "p:1:1" and decided_by == "process"
    (stored,) = store.entries(client, ledger.name)
    assert stored.call.owner == "p:1:1"  # the fleet holds it again


def test_answers_never_reach_redis_and_join_in_the_process_that_has_it(
    redis_server: RedisServer, client: redis.Redis
) -> None:
    ledger = RedisCallLedger(redis_server.url, name=name())
    ledger.claim(S, D, _call("p:1:1"), 600.0, time.monotonic())
    answer = ({"jsonrpc": "2.0", "id": 1, "result": {"secret": "card 4242"}}, "classified")
    unseen = _call("p:1:1", LedgerState.UNSEEN, answer=answer)
    ledger.settle(S, D, "p:1:1", unseen, window=600.0, now=time.monotonic())
    raw = client.get(store.key_of(ledger.name, S, D))
    assert raw is not None and b"4242" not in raw and b"answer" not in raw
    assert b"http" not in client.keys(f"{store.prefix_of(ledger.name)}*")[0]
    found, _ = ledger.claim(S, D, _call("p:1:2"), 600.0, time.monotonic())
    assert found is not None and found.answer == answer  # the local copy, with its answer
    other = RedisCallLedger(redis_server.url, name=ledger.name)
    found, _ = other.claim(S, D, _call("q:1:1"), 600.0, time.monotonic())
    assert found is not None and found.answer is None and found.state is LedgerState.UNSEEN


def test_only_its_own_claim_is_forgotten_and_threads_race_safely(
    redis_server: RedisServer,
) -> None:
    ledger = RedisCallLedger(redis_server.url, name=name())
    wins: list[str] = []
    go = threading.Barrier(8)

    def claim(n: int) -> None:
        go.wait()
        if ledger.claim(S, D, _call(f"p:1:{n}"), 600.0, time.monotonic())[0] is None:
            wins.append(f"p:1:{n}")

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(wins) == 1
    loser = next(f"p:1:{n}" for n in range(8) if f"p:1:{n}" != wins[0])
    ledger.settle(S, D, loser, None, window=600.0, now=time.monotonic())
    assert ledger.look(S, D, time.monotonic()) is not None  # not the loser's to forget
    ledger.settle(S, D, wins[0], None, window=600.0, now=time.monotonic())
    assert ledger.look(S, D, time.monotonic()) is None


def test_shared_never_copied_and_pickled_to_the_same_calls(redis_server: RedisServer) -> None:
    ledger = RedisCallLedger(redis_server.url, name=name())
    assert copy.deepcopy(ledger) is ledger and copy.copy(ledger) is ledger
    assert pickle.loads(pickle.dumps(ledger)) is ledger
    ledger.claim(S, "pickled", _call("p:1:1"), 600.0, time.monotonic())
    # held in the other process
    assert _load_in_another_process(pickle.dumps(ledger)) == [False, "redis", "p:1:1"]
    with redis.Redis.from_url(redis_server.url) as given:
        from_client = RedisCallLedger(given, name=ledger.name)
        loaded = pickle.loads(pickle.dumps(from_client))
        assert loaded is from_client
    assert isinstance(ledger.local, CallLedger)


def test_a_forked_child_reconnects_and_shares_the_calls(redis_server: RedisServer) -> None:
    ledger = RedisCallLedger(redis_server.url, name=name())
    ledger.claim(S, D, _call("p:1:1"), 600.0, time.monotonic())
    pid = os.fork()
    if pid == 0:  # the child: its own client, the same calls
        code = 1
        try:
            found, by = ledger.claim(S, D, _call("c:1:1"), 600.0, time.monotonic())
            won, by2 = ledger.claim(S, "child", _call("c:1:2"), 600.0, time.monotonic())
            if found is not None and found.owner == "p:1:1" and by == by2 == "redis":
                code = 0 if won is None else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    found, _ = ledger.claim(S, "child", _call("p:1:2"), 600.0, time.monotonic())
    assert found is not None and found.owner == "c:1:2"


def test_bad_settings_and_no_redis_at_all() -> None:
    with pytest.raises(ValueError, match="name must be a non-empty string"):
        RedisCallLedger("redis://127.0.0.1:1/0", name="")
    with pytest.raises(ValueError, match="timeout must be a number of seconds > 0"):
        RedisCallLedger("redis://127.0.0.1:1/0", timeout=0)
    with pytest.raises(TypeError, match=r"redis:// URL or a redis\.Redis client"):
        RedisCallLedger(42)  # type: ignore[arg-type]
    ledger = RedisCallLedger("redis://127.0.0.1:1/0", timeout=TIMEOUT)  # nothing listens
    started = time.monotonic()
    found, decided_by = ledger.claim(S, D, _call("p:1:1"), 600.0, time.monotonic())
    assert found is None and "redis unreachable: ConnectionError" in decided_by
    assert ledger.resolve(S, D, ran=False) and ledger.in_doubt() == []
    ledger.flush(0.0)
    ledger.flush()
    ledger.close()
    assert time.monotonic() - started < TIMEOUT + SLACK


@pytest.mark.anyio
async def test_an_async_transport_holds_a_twin_in_flight_in_another_ledger(
    redis_server: RedisServer, pay: str
) -> None:
    ledger_name = name()
    first = threading.Thread(
        target=_charge, args=(pay, RedisCallLedger(redis_server.url, name=ledger_name))
    )
    first.start()
    try:
        assert _Pay.arrived.wait(10)
        policy = RetryPolicy(tools={"lookup": "read"})
        ledger = RedisCallLedger(redis_server.url, name=ledger_name)
        transport = AsyncRetryTransport(
            httpx.AsyncHTTPTransport(), policy=policy, ledger=ledger, contain_failures=True
        )
        body = {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "charge", "arguments": {"amount": 100}},
        }
        async with httpx.AsyncClient(transport=transport) as http:
            answer = (await http.post(pay, json=body, timeout=10)).json()
        assert answer["error"]["data"]["outcome"] == "DUPLICATE_IN_FLIGHT"
        assert answer["error"]["data"]["duplicateOf"]["ledger"] == "redis"
    finally:
        _Pay.release.set()
        first.join(10)
    assert _Pay.charges == 1
