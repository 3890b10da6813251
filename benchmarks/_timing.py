"""Interleaved, repeated timing rounds with medians: the machine is shared and noisy."""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Callable

__all__ = [
    "Alternating",
    "Batch",
    "alternate",
    "calibrate",
    "clock",
    "cpu_clock",
    "interleave",
    "median",
]

# A batch runs n calls and returns the seconds they took (it times itself, so async
# batches exclude the event loop's start-up).
Batch = Callable[[int], float]
# n calls of each contender, alternated call by call: name -> (wall seconds, seconds of this
# process's CPU time) that its n calls took.
Alternating = Callable[[int], dict[str, tuple[float, float]]]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def calibrate(batch: Batch, target: float, max_n: int = 100_000) -> int:
    """Calls per batch so that one batch takes about ``target`` seconds (at least 3)."""
    n = 1
    while True:
        took = batch(n)
        if took >= target / 4 or n >= max_n:
            break
        n *= 4
    per_call = took / n
    return max(3, min(max_n, round(target / per_call))) if per_call > 0 else max_n


def interleave(
    batches: dict[str, Batch], *, rounds: int, target: float, seed: int = 5
) -> dict[str, list[float]]:
    """Seconds per call of every batch, per round; the order of batches is shuffled per round.

    Each contender gets its own batch size (about ``target`` seconds), and all contenders
    run once in every round, so slow phases of the machine hit them alike.
    """
    rng = random.Random(seed)
    sizes = {name: calibrate(batch, target) for name, batch in batches.items()}
    for name, batch in batches.items():  # warm up after calibration too
        batch(max(1, sizes[name] // 4))
    per_call: dict[str, list[float]] = {name: [] for name in batches}
    names = list(batches)
    for _ in range(rounds):
        rng.shuffle(names)
        for name in names:
            gc.collect()
            n = sizes[name]
            per_call[name].append(batches[name](n) / n)
    return per_call


def alternate(
    calls: Alternating, *, rounds: int, target: float
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds per call of every contender, per round.

    ``calls(n)`` alternates the contenders call by call (n calls each), so a slow phase
    of the machine lands on them alike: on a loaded machine alternating whole batches
    leaves per-round ratios of CPU time spread over x0.8-x1.7, call by call over
    x1.05-x1.15. Rounds are sized to take about ``target`` seconds of wall time.
    """
    n = calibrate(lambda k: sum(wall for wall, _ in calls(k).values()), target)
    calls(max(1, n // 4))  # warm up after calibration too
    wall: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    for _ in range(rounds):
        gc.collect()
        for name, (took, used) in calls(n).items():
            wall.setdefault(name, []).append(took / n)
            cpu.setdefault(name, []).append(used / n)
    return wall, cpu


def clock() -> float:
    return time.perf_counter()


def cpu_clock() -> float:
    """This process's CPU time (every thread, user and system), in seconds."""
    return time.process_time()
