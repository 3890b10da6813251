"""Fixtures for the kitchen tests: servers that always stop, and a thread-leak guard."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kitchen_wire import StartKitchen

from mcp_safe_retry.kitchen import KitchenServer


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio: the official mcp client under test is asyncio-based."""
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_leaked_kitchen_threads() -> Iterator[None]:
    """Fail a test that leaves any thread behind (the kitchen's own included)."""
    before = set(threading.enumerate())
    yield
    leaked = [t.name for t in threading.enumerate() if t not in before]
    assert leaked == []


@pytest.fixture
def start_kitchen() -> Iterator[StartKitchen]:
    """Start kitchens with `KitchenServer` arguments; every one is stopped after the test."""
    started: list[KitchenServer] = []

    def start(*args: Any, **kwargs: Any) -> KitchenServer:
        kitchen = KitchenServer(*args, **kwargs).start()
        started.append(kitchen)
        return kitchen

    yield start
    for kitchen in started:
        kitchen.stop()


@pytest.fixture
def kitchen(start_kitchen: StartKitchen) -> KitchenServer:
    """A kitchen with the SDK defaults: stateful, SSE answers."""
    return start_kitchen()
