"""A fleet's circuits as Redis holds them (shared/circuits.py), against a real Redis: where a
circuit lives, what a batch of outcomes sends, and the three round trips (a probe, a send,
a read), each None while Redis does not answer."""

from __future__ import annotations

import redis

from mcp_safe_retry.core.breaker import BreakerSettings, CircuitState
from mcp_safe_retry.shared.circuits import Outcomes, SharedCircuits, SharedState
from mcp_safe_retry.shared.link import RedisLink
from tests.redis_support import RedisServer
from tests.shared.common import A, B, Clock, name

SETTINGS = BreakerSettings(failure_threshold=2, open_for=5.0)


def _circuits(url: str, clock: Clock | None = None) -> SharedCircuits:
    link = RedisLink(url, timeout=0.25, retry_interval=2.0, what="test", clock=clock or Clock())
    return SharedCircuits(link, name(), SETTINGS, expiry=60.0)


def test_a_circuit_lives_under_the_name_as_a_hash_of_its_server_key() -> None:
    circuits = _circuits("redis://127.0.0.1:1/0")
    key = circuits.key(A)
    assert key.startswith(f"mcp-safe-retry:{{{circuits.name}}}:breaker:")
    assert A not in key and len(key.rpartition(":")[2]) == 20  # a 10-byte digest, in hex
    assert circuits.key(A) == key != circuits.key(B)


def test_a_batch_of_outcomes_is_sent_in_the_order_the_script_reads_it() -> None:
    assert Outcomes(1, 2, 2, 1.5, 3, 1).args() == ["1", "2", "2", "1500", "3", "1"]
    assert Outcomes(failed=1).args()[3] == "-1"  # no Retry-After


def test_outcomes_sent_trip_the_circuit_and_a_read_and_a_probe_see_it(
    redis_server: RedisServer, client: redis.Redis
) -> None:
    circuits = _circuits(redis_server.url)
    assert circuits.read([A]) == {A: SharedState(CircuitState.CLOSED, 0.0)}
    assert circuits.probe(A) == (True, SharedState(CircuitState.CLOSED, 0.0))

    sent = circuits.send({A: Outcomes(failed=2, tail=2, calls=1, calls_failed=1)})
    assert sent is not None and sent[A].state is CircuitState.OPEN
    assert 4.0 < sent[A].wait <= 5.0
    assert client.hget(circuits.key(A), "s") == b"1"  # open, in Redis, under its key

    read = circuits.read([A, B])
    assert read is not None and read[A].state is CircuitState.OPEN
    assert read[B] == SharedState(CircuitState.CLOSED, 0.0)
    allowed, seen = circuits.probe(A) or (None, None)
    assert allowed is False and seen is not None and seen.state is CircuitState.OPEN


def test_every_round_trip_is_none_while_redis_does_not_answer() -> None:
    circuits = _circuits("redis://127.0.0.1:1/0")  # nothing listens there
    assert circuits.probe(A) is None
    assert circuits.send({A: Outcomes(failed=1)}) is None
    assert circuits.read([A]) is None
    assert circuits.link.down
