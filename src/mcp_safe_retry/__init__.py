"""mcp-safe-retry: MCP tool calls over HTTP that fail honestly and recover safely.

Wrap an httpx transport with ``RetryTransport`` / ``AsyncRetryTransport``: every JSON-RPC
message is classified layer by layer (HTTP, JSON-RPC envelope, tool result), only calls that
are safe to repeat are retried, and every attempt is recorded. For httpx2 (``mcp`` 2.x,
``fastmcp`` 4.x) use the same names from ``mcp_safe_retry.httpx2``.
"""

from .core.access import get_record
from .core.breaker import Breaker, CircuitBreaker
from .core.budget import Budget, GrpcBudget, RetryBudget
from .core.call import IDEMPOTENCY_EXTENSION
from .core.classify import Classification, Layer, Outcome, classify
from .core.contain import CONTAINED_ERROR_CODE
from .core.delivery import Delivery
from .core.origin import ALLOW_DUPLICATE_EXTENSION, ORIGIN_EXTENSION, allow_duplicate, retry_origin
from .core.policy import (
    Action,
    AdaptiveDelay,
    Decision,
    DuplicateGuard,
    Idempotency,
    Jitter,
    Reason,
    RetryPolicy,
)
from .core.records import Attempt, CallRecord, History, RetryOrigin
from .instrumentation.hooks import Hook
from .instrumentation.jsonlines import JsonLinesSink
from .shells.errors_httpx import BodyTooLarge, CircuitOpenError, DuplicateCallError
from .shells.generated.httpx_sync import RetryTransport
from .shells.httpx_async import AsyncRetryTransport, mcp_client

__version__ = "0.1.0"

__all__ = [
    "ALLOW_DUPLICATE_EXTENSION",
    "CONTAINED_ERROR_CODE",
    "IDEMPOTENCY_EXTENSION",
    "ORIGIN_EXTENSION",
    "Action",
    "AdaptiveDelay",
    "AsyncRetryTransport",
    "Attempt",
    "BodyTooLarge",
    "Breaker",
    "Budget",
    "CallRecord",
    "CircuitBreaker",
    "CircuitOpenError",
    "Classification",
    "Decision",
    "Delivery",
    "DuplicateCallError",
    "DuplicateGuard",
    "GrpcBudget",
    "History",
    "Hook",
    "Idempotency",
    "Jitter",
    "JsonLinesSink",
    "Layer",
    "Outcome",
    "Reason",
    "RetryBudget",
    "RetryOrigin",
    "RetryPolicy",
    "RetryTransport",
    "__version__",
    "allow_duplicate",
    "classify",
    "get_record",
    "mcp_client",
    "retry_origin",
]
