"""Holders of live shared state (core/live.py): a copy is the object itself; a pickle finds
it again in this process, and builds a fresh one by its recipe where it is gone; its token
comes from the source handed in (the package hands in a random one)."""

from __future__ import annotations

import copy
import functools
import gc
import pickle

import pytest

from mcp_safe_retry.core.live import Live, draw_tokens_from


class Counter(Live):
    """A holder with one setting and some state."""

    __slots__ = ("__weakref__", "limit", "seen")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.seen = 0

    def _recipe(self) -> functools.partial[Counter]:
        return functools.partial(Counter, limit=self.limit)


class Local(Live):
    """A holder that cannot leave its process, and says why."""

    __slots__ = ("__weakref__",)

    def _recipe(self) -> functools.partial[Local]:
        raise TypeError("Local holds an open file: it cannot leave this process")


def test_a_copy_and_a_deep_copy_are_the_object_itself() -> None:
    counter = Counter(3)
    assert copy.copy(counter) is counter
    assert copy.deepcopy({"held": [counter]})["held"][0] is counter


def test_a_pickle_loaded_where_the_object_lives_is_that_object() -> None:
    counter = Counter(3)
    counter.seen = 5
    again = pickle.loads(pickle.dumps(counter))
    assert again is counter
    assert pickle.loads(pickle.dumps(counter)) is counter  # one token per object


def test_a_pickle_of_a_dropped_object_loads_as_one_fresh_object_with_its_settings() -> None:
    counter = Counter(3)
    counter.seen = 5
    data = pickle.dumps(counter)
    del counter
    gc.collect()
    fresh = pickle.loads(data)
    assert isinstance(fresh, Counter) and (fresh.limit, fresh.seen) == (3, 0)
    assert pickle.loads(data) is fresh  # everything loaded with that token shares it


def test_a_holder_that_cannot_travel_says_why() -> None:
    with pytest.raises(TypeError, match="open file"):
        pickle.dumps(Local())


def test_tokens_come_from_the_source_handed_in() -> None:
    drawn = iter(["first", "second"])
    previous = draw_tokens_from(lambda: next(drawn))
    try:
        counter, other = Counter(1), Counter(2)
        assert pickle.dumps(counter) == pickle.dumps(counter)  # one token per object
        assert b"first" in pickle.dumps(counter)
        assert b"second" in pickle.dumps(other)
    finally:
        assert previous is not None
        draw_tokens_from(previous)


def test_the_package_hands_in_random_tokens() -> None:
    counters = [Counter(n) for n in range(3)]
    tokens = [counter.__reduce__()[1][0] for counter in counters]  # what a pickle carries
    assert len(set(tokens)) == 3
    assert all(len(t) == 32 and int(t, 16) >= 0 for t in tokens)
