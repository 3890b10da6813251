"""The fleet budget claim, with real processes: four workers, one Redis, one outage."""

from __future__ import annotations

from tests.fleet_support import run_fleet
from tests.redis_support import RedisServer


def test_four_processes_share_one_budget_in_an_outage(redis_server: RedisServer) -> None:
    shared = run_fleet(redis_server.url, workers=4, calls=250)
    local = run_fleet(None, workers=4, calls=250)
    print(f"fleet outage, 4 x 250 calls: {shared} POSTs shared, {local} with local budgets")
    assert shared <= 1.1 * 1000 + 10
    assert shared == 1000 + 100  # one burst for the fleet...
    assert local == 1000 + 4 * 100  # ...where local budgets spend one each
