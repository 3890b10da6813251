"""The retry transports for httpx2, the HTTP client of ``mcp`` 2.x and ``fastmcp`` 4.x.

Same engine, same signatures and behaviour as ``mcp_safe_retry.RetryTransport``,
``mcp_safe_retry.AsyncRetryTransport`` and ``mcp_safe_retry.mcp_client``; importing this module
requires ``httpx2``. Everything else (the policy, records, exceptions) is shared: import it
from ``mcp_safe_retry``. The exceptions the httpx2 transports raise derive from
``httpx2.TransportError`` and from ``mcp_safe_retry``'s own class of the same name, which
catches them.
"""

from ._extras import missing_extra as _missing_extra

try:
    from .shells.generated.httpx2_async import AsyncRetryTransport, mcp_client
    from .shells.generated.httpx2_sync import RetryTransport
except ModuleNotFoundError as error:
    raise _missing_extra("mcp_safe_retry.httpx2", "mcp", error, ("httpx2",)) from error

__all__ = ["AsyncRetryTransport", "RetryTransport", "mcp_client"]
