"""benchmarks.machine_counts: its children run, and a callgrind file is read per call."""

from __future__ import annotations

import pytest

from benchmarks import machine_counts


def test_the_totals_line_is_read_per_call_not_the_summary() -> None:
    profile = "events: Ir I1mr\nsummary: 0 0\nfn=(1) f\n0 5 1\ntotals: 1000 30\n"
    assert machine_counts._per_call(profile, 10) == {"Ir": 100.0, "I1mr": 3.0}


def test_a_file_without_totals_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="no totals"):
        machine_counts._per_call("events: Ir\nsummary: 0\n", 10)


@pytest.fixture(autouse=True)
def few_warm_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MACHINE_COUNTS_WARM", "3")


@pytest.mark.parametrize("who", machine_counts.IN_PROCESS)
def test_each_in_process_child_makes_its_calls(who: str) -> None:
    # Outside valgrind the collection switch does nothing: the child's calls run as they
    # would under callgrind, and a wrong answer raises (async_httpx2.client_batch checks one).
    assert machine_counts.main(["--child", "in", who, "sse-1k", "3"]) == 0


@pytest.mark.parametrize("who", machine_counts.SYNC)
def test_each_sync_child_makes_its_calls(who: str) -> None:
    assert machine_counts.main(["--child", "sync", who, "3"]) == 0


def test_the_official_children_run_a_session_each() -> None:
    # One server for the three: each child opens its own session and makes its calls.
    from benchmarks.official import official_server

    with official_server() as url:
        for who in machine_counts.OFFICIAL:
            for mode in ("auto", "legacy"):
                assert machine_counts.main(["--child", "official", who, mode, "2", url]) == 0


def test_a_table_says_what_we_add_against_what_the_sketch_adds() -> None:
    said: list[str] = []
    counts = {"bare": {"Ir": 1000.0}, "sketch": {"Ir": 1100.0}, "mcp-safe-retry": {"Ir": 1350.0}}
    machine_counts._table(said.append, "case", counts, False, "sketch")
    assert "| mcp-safe-retry | 1.4 k | x1.350 | +0.3 k |" in said
    assert said[-1] == "\nadded by mcp-safe-retry / added by the sketch: 3.50x"
