"""mcp-safe-retry: MCP tool calls over HTTP that fail honestly and recover safely.

Wrap an httpx transport with ``RetryTransport`` / ``AsyncRetryTransport`` (or build a client
with ``mcp_client``): every JSON-RPC message is classified layer by layer (HTTP, JSON-RPC
envelope, tool result), only calls that are safe to repeat are retried, and every attempt is
recorded. For httpx2 (``mcp`` 2.x, ``fastmcp`` 4.x) use the same names from
``mcp_safe_retry.httpx2``.

Here: the transports, the policy, the budget and breaker, the exceptions and the records'
entry points. The rest lives in sub-namespaces: ``mcp_safe_retry.records`` (what a record
says: ``Outcome``, ``Attempt``, ``CallRecord``, ...), ``mcp_safe_retry.hooks`` (observers),
``mcp_safe_retry.policy`` (the values ``RetryPolicy`` settings take),
``mcp_safe_retry.extensions`` (request and response extension keys),
``mcp_safe_retry.tenacity``, ``mcp_safe_retry.otel`` and ``mcp_safe_retry.redis``.
"""

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

from ._system import CircuitBreaker
from .core.access import get_record
from .core.breaker import Breaker
from .core.budget import Budget, RetryBudget
from .core.classify import classify
from .core.errors import BodyTooLarge, CircuitOpenError, DuplicateCallError
from .core.idempotency import Idempotency
from .core.origin import allow_duplicate, retry_origin
from .core.policy import RetryPolicy
from .core.records import History
from .shared.ledgers import CallLedger
from .shells.generated.httpx_sync import RetryTransport
from .shells.httpx_async import AsyncRetryTransport, mcp_client

try:
    __version__ = _version("mcp-safe-retry")  # written once, in pyproject.toml
except _PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "AsyncRetryTransport",
    "BodyTooLarge",
    "Breaker",
    "Budget",
    "CallLedger",
    "CircuitBreaker",
    "CircuitOpenError",
    "DuplicateCallError",
    "History",
    "Idempotency",
    "RetryBudget",
    "RetryPolicy",
    "RetryTransport",
    "__version__",
    "allow_duplicate",
    "classify",
    "get_record",
    "mcp_client",
    "retry_origin",
]
