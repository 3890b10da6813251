"""Recent latencies per server: the window's quantiles, its bounds, and the hedge delay."""

from __future__ import annotations

import math
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_safe_retry.core.hedge_settings import AdaptiveDelay
from mcp_safe_retry.core.latency import Latencies, LatencyWindow, hedge_delay, server_key


@settings(max_examples=200, deadline=None)
@given(
    samples=st.lists(st.floats(0, 100, allow_nan=False), max_size=300),
    q=st.floats(0.01, 0.99),
    size=st.integers(1, 64),
)
def test_window_quantile_is_nearest_rank_of_the_last_refresh(
    samples: list[float], q: float, size: int
) -> None:
    refresh = max(1, size // 4)
    window = LatencyWindow(size=size, refresh=refresh)
    for s in samples:
        window.add(s)
    refreshed = len(samples) - len(samples) % refresh
    last = sorted(samples[:refreshed][-size:])
    got = window.quantile(q)
    if not last:
        assert got is None
    else:
        rank = min(len(last), max(1, -(-q * len(last) // 1)))
        assert got == last[int(rank) - 1]
    assert window.count == len(samples)


def naive(values: list[float], q: float) -> float:
    """The nearest-rank quantile of ``values`` (sorted here)."""
    ordered = sorted(values)
    return ordered[min(len(ordered), max(1, math.ceil(q * len(ordered)))) - 1]


@settings(max_examples=300, deadline=None)
@given(
    samples=st.lists(
        st.tuples(st.floats(0, 10, allow_nan=False), st.booleans()), min_size=1, max_size=64
    ),
    q=st.floats(0.01, 0.99),
)
def test_censored_latencies_count_as_at_least(samples: list[tuple[float, bool]], q: float) -> None:
    """A censored latency lies somewhere at or past its value: the quantile lies between the
    one read as if it were an answer then and the one read as if it never came, and it is
    always an answered latency."""
    window = LatencyWindow(size=64, refresh=1)
    for seconds, censored in samples:
        window.add(seconds, censored=censored)
    got = window.quantile(q)
    answered = [t for t, c in samples if not c]
    if not answered:  # nothing answered: only a lower bound is known
        assert got == max(t for t, _ in samples)
        return
    assert got in answered
    # past the last answer the estimate ends: the last answer is read (the delay waits no
    # longer than any answer it has seen come)
    assert got >= naive([t for t, _ in samples], q) or got == max(answered)
    upper = naive([math.inf if c else t for t, c in samples], q)
    assert got <= upper


def test_censoring_before_every_answer_changes_nothing() -> None:
    window = LatencyWindow(size=16, refresh=1)
    for t in (0.1, 0.2, 0.3, 0.4):
        window.add(t)
    before = [window.quantile(q) for q in (0.25, 0.5, 0.75, 1.0)]
    window.add(0.05, censored=True)
    assert [window.quantile(q) for q in (0.25, 0.5, 0.75, 1.0)] == before == [0.1, 0.2, 0.3, 0.4]


def test_censored_mass_moves_to_later_answers() -> None:
    """Two of four copies cancelled at 0.15: their share goes to the answers after 0.15 (the
    Kaplan-Meier estimate), so the median is 0.3, not 0.15 nor 0.1."""
    window = LatencyWindow(size=16, refresh=1)
    for t, censored in ((0.1, False), (0.15, True), (0.15, True), (0.3, False), (0.4, False)):
        window.add(t, censored=censored)
    assert window.quantile(0.2) == 0.1
    assert window.quantile(0.5) == 0.3  # 0.2 + 0.8 * (1/2) = 0.6 at 0.3
    assert window.quantile(0.9) == 0.4


def test_a_quantile_past_every_answer_is_the_last_answer() -> None:
    """A tenth of the copies cancelled at 0.5 with none answered later: the 95th percentile is
    only known to lie past 0.2, the largest answer, and that is what is read."""
    window = LatencyWindow(size=32, refresh=1)
    for i in range(18):
        window.add(0.01 * (i + 3))
    window.add(0.5, censored=True)
    window.add(0.5, censored=True)
    assert window.quantile(0.9) == pytest.approx(0.2)
    assert window.quantile(0.95) == pytest.approx(0.2)


def test_window_ignores_nonsense_and_waits_for_samples() -> None:
    window = LatencyWindow(size=8, refresh=2)
    for bad in (float("nan"), float("inf"), -1.0):
        window.add(bad)
    assert window.count == 0 and window.quantile(0.5) is None
    for s in (0.1, 0.2, 0.3, 0.4):
        window.add(s)
    assert window.quantile(0.5, min_samples=5) is None
    assert window.quantile(0.5, min_samples=4) == 0.2
    assert window.quantile(0.95) == 0.4
    with pytest.raises(ValueError):
        LatencyWindow(size=4, refresh=5)


def test_window_under_threads_counts_every_sample() -> None:
    window = LatencyWindow(size=64, refresh=8)

    def feed(offset: int) -> None:
        for i in range(2000):
            window.add((offset + i) / 1000)

    threads = [threading.Thread(target=feed, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert window.count == 8000
    q = window.quantile(0.5)
    assert q is not None and 0 <= q <= 2.003


def test_latencies_keep_a_bounded_number_of_servers() -> None:
    latencies = Latencies(size=4, refresh=1, max_servers=2)
    latencies.add("a", 0.1)
    latencies.add("b", 0.2)
    latencies.add("a", 0.3)  # a is now the most recent
    latencies.add("c", 0.4)  # b goes
    assert latencies.window("b") is None
    window = latencies.window("a")
    assert window is not None and window.count == 2
    with pytest.raises(ValueError):
        Latencies(max_servers=0)


@pytest.mark.parametrize(
    ("hedge_after", "samples", "expected"),
    [
        pytest.param(None, [], None, id="off"),
        pytest.param(0.3, [5.0] * 40, 0.3, id="fixed-ignores-window"),
        pytest.param(AdaptiveDelay(initial=0.25), [], 0.25, id="adaptive-initial"),
        pytest.param(AdaptiveDelay(min_samples=20), [0.5] * 16, 0.25, id="too-few-samples"),
        pytest.param(AdaptiveDelay(min_samples=16), [0.5] * 16, 0.5, id="adaptive-quantile"),
        pytest.param(AdaptiveDelay(min_samples=1), [0.001] * 16, 0.02, id="floor"),
        pytest.param(AdaptiveDelay(min_samples=1), [9.0] * 16, 2.0, id="ceiling"),
    ],
)
def test_hedge_delay(
    hedge_after: float | AdaptiveDelay | None, samples: list[float], expected: float | None
) -> None:
    window = LatencyWindow(size=64, refresh=16)
    for s in samples:
        window.add(s)
    assert hedge_delay(hedge_after, window if samples else None) == expected


@pytest.mark.parametrize(
    ("url", "key"),
    [
        pytest.param("http://127.0.0.1:8000/mcp?run=1", "http://127.0.0.1:8000/mcp", id="query"),
        pytest.param("HTTP://Example.COM:80/mcp", "http://example.com/mcp", id="case-port"),
        pytest.param("https://u:p@h/mcp#x", "https://h/mcp", id="credentials"),
        pytest.param("http://[::1]:9/", "http://[::1]:9/", id="ipv6"),
        pytest.param("http://h:99999/x", "http://h/x", id="bad-port"),
        pytest.param("http://h", "http://h/", id="no-path"),
    ],
)
def test_server_key(url: str, key: str) -> None:
    assert server_key(url) == key
