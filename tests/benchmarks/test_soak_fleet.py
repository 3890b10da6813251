"""The fleet soak in miniature: two processes, one Redis budget and breaker, the soak's
mixed faults and invariants (the full run: ``python -m benchmarks.soak_fleet``)."""

from __future__ import annotations

import pytest

from benchmarks.soak_fleet import run_fleet_soak
from tests.redis_support import RedisServer

pytestmark = pytest.mark.e2e


def test_two_processes_share_one_redis_the_breaker_opens_and_every_invariant_holds(
    redis_server: RedisServer,
) -> None:
    reports = run_fleet_soak(redis_server.url, workers=2, calls=160, seed=5, timeout=90)
    assert len(reports) == 2
    for seed, passed, report in reports:
        failed = {i["name"]: i["failures"][:3] for i in report["invariants"] if not i["passed"]}
        assert passed, (seed, failed)
        assert report["stats"]["calls"] == 80
        charge = report["stats"]["charge"]
        assert charge["maxPerKey"] <= 1  # no duplicate side effect
        held = next(i for i in report["invariants"] if i["name"] == "held_attempts_sent_nothing")
        assert held["passed"] and held["failureCount"] == 0
    breakers = [report["stats"]["breaker"] for _, _, report in reports]
    # The mixed faults open the shared breaker, and calls are held while it is open.
    assert sum(b["opens"] for b in breakers) >= 1, breakers
    assert sum(b["heldCalls"] for b in breakers) >= 1, breakers
