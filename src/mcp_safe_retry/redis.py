"""A retry budget, a circuit breaker and a call ledger shared by a fleet of processes through
Redis.

Install with the ``redis`` extra (``pip install "mcp-safe-retry[redis]"``)::

    from mcp_safe_retry import RetryTransport
    from mcp_safe_retry.redis import RedisBudget

    budget = RedisBudget("redis://127.0.0.1:6379/0", name="search-agents")
    transport = RetryTransport(httpx.HTTPTransport(), budget=budget)

All three serve sync and async transports alike, fall back to local state while Redis
is down, and never raise into a call.
"""

from ._extras import missing_extra as _missing_extra

try:
    from .shared.breaker import RedisCircuitBreaker
    from .shared.budget import RedisBudget
    from .shared.call_ledger import RedisCallLedger
except ModuleNotFoundError as error:
    raise _missing_extra("mcp_safe_retry.redis", "redis", error, ("redis",)) from error

__all__ = ["RedisBudget", "RedisCallLedger", "RedisCircuitBreaker"]
