"""The retry transports for httpx2, the HTTP client of ``mcp`` 2.x and ``fastmcp`` 4.x.

Same engine, same signatures and behaviour as ``mcp_safe_retry.RetryTransport`` and
``mcp_safe_retry.AsyncRetryTransport``; importing this module requires ``httpx2``.
"""

from .shells.generated.errors_httpx2 import BodyTooLarge, CircuitOpenError, DuplicateCallError
from .shells.generated.httpx2_async import AsyncRetryTransport, mcp_client
from .shells.generated.httpx2_sync import RetryTransport

__all__ = [
    "AsyncRetryTransport",
    "BodyTooLarge",
    "CircuitOpenError",
    "DuplicateCallError",
    "RetryTransport",
    "mcp_client",
]
