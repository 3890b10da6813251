"""The fleet breaker with real processes and a real Redis: a trip in one worker holds the
others back within one shared-state refresh; a successful probe closes it for all."""

from __future__ import annotations

import time

from tests.fleet_support import BREAKER_OPEN_FOR, BREAKER_REFRESH, BreakerFleet
from tests.redis_support import RedisServer


def test_a_trip_in_one_process_holds_back_the_others_and_a_probe_closes_it_for_all(
    redis_server: RedisServer,
) -> None:
    with BreakerFleet(redis_server.url, workers=3) as fleet:
        assert [fleet.call(i) for i in range(3)] == [("200", 1)] * 3  # each knows the server
        fleet.down = True
        assert [fleet.call(0)[0] for _ in range(5)] == ["503"] * 5  # worker 0 trips it
        sent = fleet.posts
        time.sleep(BREAKER_REFRESH * 1.5)  # one refresh of the others, with room to spare
        assert [fleet.call(i) for i in (0, 1, 2)] == [("circuit_open", 0)] * 3
        assert fleet.posts == sent  # held back: nothing sent by any worker

        fleet.down = False
        time.sleep(BREAKER_OPEN_FOR + 0.05)
        assert fleet.call(2) == ("200", 1)  # the fleet's one probe, a success: closed
        time.sleep(BREAKER_REFRESH * 1.5)
        assert [fleet.call(i) for i in (0, 1)] == [("200", 1)] * 2
        assert fleet.posts == sent + 3
