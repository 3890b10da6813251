"""The keys this library reads from a request's ``extensions`` and writes to a response's.

``IDEMPOTENCY_EXTENSION`` (``"read"`` or ``"unsafe"``) overrides the policy for one request,
``ORIGIN_EXTENSION`` says who re-sent it (or use ``retry_origin()``),
``ALLOW_DUPLICATE_EXTENSION`` (``True``) lets it through the duplicate guard (or use
``allow_duplicate()``), ``CALLER_EXTENSION`` (a string: a digest, never a credential) names
whom a transport that sends for many callers sends it for, so the duplicate guard keeps
their calls apart (the gateway sets it); ``RECORD_EXTENSION`` holds a response's record
(read it with ``get_record``).
"""

from .core.extensions import (
    ALLOW_DUPLICATE_EXTENSION,
    CALLER_EXTENSION,
    IDEMPOTENCY_EXTENSION,
    ORIGIN_EXTENSION,
    RECORD_EXTENSION,
)

__all__ = [
    "ALLOW_DUPLICATE_EXTENSION",
    "CALLER_EXTENSION",
    "IDEMPOTENCY_EXTENSION",
    "ORIGIN_EXTENSION",
    "RECORD_EXTENSION",
]
