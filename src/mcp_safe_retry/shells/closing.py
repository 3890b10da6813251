"""What a transport does as it closes, besides closing its inner transport: send what its
shared objects (a ``RedisBudget``, a ``RedisCircuitBreaker``) hold for the other processes
(``Engine.flush``), each within its own timeout, without closing them (they may serve other
transports). ``scripts/unasync.py`` maps ``aflush_shared`` to ``flush_shared``."""

from __future__ import annotations

import anyio.to_thread

from ..core.engine import Engine

__all__ = ["aflush_shared", "flush_shared"]


def flush_shared(engine: Engine) -> None:
    """``engine.flush()``, as a sync transport closes."""
    engine.flush()


async def aflush_shared(engine: Engine) -> None:
    """``engine.flush()`` in a worker thread, as an async transport closes: its event loop
    never waits on Redis."""
    if engine.shared:
        await anyio.to_thread.run_sync(engine.flush)
