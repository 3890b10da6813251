"""Interleaved, repeated timing rounds with medians: the machine is shared and noisy."""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Callable

__all__ = [
    "Batch",
    "CpuBatch",
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
# The same, returning (wall seconds, seconds of this process's CPU time) for the n calls.
CpuBatch = Callable[[int], tuple[float, float]]


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
    batches: dict[str, CpuBatch], *, rounds: int, target: float
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds per call of every batch, per round, in strict alternation.

    Every contender runs the same number of calls per batch (sized on the first one to take
    about ``target`` seconds of wall time), in the same order every round (first, second,
    ..., first, second, ...), so a slow phase of the machine lands on neighbours alike.
    """
    first = next(iter(batches.values()))
    n = calibrate(lambda k: first(k)[0], target)
    for batch in batches.values():  # warm up after calibration too
        batch(max(1, n // 4))
    wall: dict[str, list[float]] = {name: [] for name in batches}
    cpu: dict[str, list[float]] = {name: [] for name in batches}
    for _ in range(rounds):
        for name, batch in batches.items():
            gc.collect()
            took, used = batch(n)
            wall[name].append(took / n)
            cpu[name].append(used / n)
    return wall, cpu


def clock() -> float:
    return time.perf_counter()


def cpu_clock() -> float:
    """This process's CPU time (every thread, user and system), in seconds."""
    return time.process_time()
