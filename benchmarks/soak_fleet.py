"""The soak as a fleet: ``python -m benchmarks.soak_fleet --workers 3 --calls 3000``.

Several worker processes each run a slice of the soak (``tests/soak_support.py``: the kitchen's
mixed faults, every client path, its own kitchens) with one ``RedisBudget`` and one
``RedisCircuitBreaker`` of the same name, on one real redis-server started here. The breaker
opens after 3 transient failures in a row and stays open 0.05 s, so the mixed faults open
and close it many times in a run. Each worker checks the soak's invariants on its own calls
(no duplicate side effect, records agree with the kitchen's log, a held call sent nothing
...); the fleet passes when every worker's do. Each worker has its own kitchens, so its
circuits (one per kitchen URL) are its own, kept in the shared Redis. Bounded: each worker has
the soak's global timeout, and is killed (failing the run) if it does not return after it.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # a checkout: benchmarks.fleet, tests.soak_support

from benchmarks.fleet import start_redis  # noqa: E402
from tests.soak_support import SoakConfig, run_soak  # noqa: E402

__all__ = ["run_fleet_soak"]


def _worker(config: SoakConfig, results: Any) -> None:
    report = run_soak(config)
    results.put((config.seed, report.passed, report.to_json()))


def run_fleet_soak(
    redis_url: str,
    *,
    workers: int = 3,
    calls: int = 3000,
    seed: int = 1,
    concurrency: int = 8,
    timeout: float = 600.0,
    breaker_threshold: int = SoakConfig.breaker_threshold,
    breaker_open_for: float = SoakConfig.breaker_open_for,
) -> list[tuple[int, bool, dict[str, Any]]]:
    """Run ``calls`` soak calls split over ``workers`` processes sharing one Redis budget and
    breaker (opening after ``breaker_threshold`` transient failures in a row, for
    ``breaker_open_for`` seconds); each worker's ``(seed, passed, report)``, in the order
    they finished.

    Raises:
        RuntimeError: a worker did not finish in time or died.
    """
    name = f"soak-{uuid.uuid4().hex[:8]}"
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    processes = []
    for i in range(workers):
        config = SoakConfig(
            calls=max(1, calls // workers),
            concurrency=concurrency,
            seed=seed + i,
            call_timeout=min(30.0, timeout),
            global_timeout=timeout,
            redis_url=redis_url,
            shared_name=name,
            breaker_threshold=breaker_threshold,
            breaker_open_for=breaker_open_for,
        )
        processes.append(context.Process(target=_worker, args=(config, results)))
    try:
        for process in processes:
            process.start()
        reports = [results.get(timeout=timeout + 60) for _ in processes]
        for process in processes:
            process.join(30)
    except Exception as exc:  # the queue's Empty: a worker hung or died
        raise RuntimeError(f"a soak worker did not report: {exc!r}") from exc
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
    return reports


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--calls", type=int, default=3000, help="calls in all")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=8, help="per worker")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per worker")
    parser.add_argument(
        "--breaker-threshold",
        type=int,
        default=SoakConfig.breaker_threshold,
        help="transient failures in a row that open the shared breaker",
    )
    parser.add_argument(
        "--breaker-open-for",
        type=float,
        default=SoakConfig.breaker_open_for,
        help="seconds the breaker stays open before a probe",
    )
    parser.add_argument("--json", action="store_true", help="print the reports as JSON")
    args = parser.parse_args(argv)
    redis = start_redis()
    if redis is None:
        return 2
    try:
        reports = run_fleet_soak(
            redis.url,
            workers=args.workers,
            calls=args.calls,
            seed=args.seed,
            concurrency=args.concurrency,
            timeout=args.timeout,
            breaker_threshold=args.breaker_threshold,
            breaker_open_for=args.breaker_open_for,
        )
    finally:
        redis.close()
    passed = all(ok for _, ok, _ in reports)
    if args.json:
        print(json.dumps([report for _, _, report in reports], indent=2))
    else:
        for seed, ok, report in sorted(reports, key=lambda r: r[0]):
            stats = report["stats"]
            breaker = stats["breaker"]
            failed = [i["name"] for i in report["invariants"] if not i["passed"]]
            print(
                f"worker seed {seed}: {stats['calls']} calls, {stats['posts']['toolsCall']}"
                f" tools/call POSTs, {stats['retries']['total']} retries,"
                f" {breaker['heldCalls']} held by the breaker (opened {breaker['opens']}x,"
                f" closed {breaker['closes']}x),"
                f" {'all invariants held' if ok else 'FAILED: ' + ', '.join(failed)}"
            )
        held = sum(r["stats"]["breaker"]["heldCalls"] for _, _, r in reports)
        opens = sum(r["stats"]["breaker"]["opens"] for _, _, r in reports)
        closes = sum(r["stats"]["breaker"]["closes"] for _, _, r in reports)
        print(
            f"fleet of {len(reports)}: {'passed' if passed else 'FAILED'};"
            f" {held} calls held, breaker opened {opens}x and closed {closes}x"
        )
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
