"""Recent latencies per server: the window's quantiles, its bounds, and the hedge delay."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_safe_retry.core.latency import Latencies, LatencyWindow, hedge_delay, server_key
from mcp_safe_retry.core.policy import AdaptiveDelay


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
