"""OpenTelemetry traces and metrics for retry transports (needs the ``otel`` extra).

The short public path of :mod:`mcp_safe_retry.instrumentation.otel`; importing it imports
``opentelemetry``.
"""

from ._extras import missing_extra as _missing_extra

try:
    from .instrumentation.otel import DURATION_BUCKETS, OpenTelemetryHook
except ModuleNotFoundError as error:
    raise _missing_extra("mcp_safe_retry.otel", "otel", error, ("opentelemetry",)) from error

__all__ = ["DURATION_BUCKETS", "OpenTelemetryHook"]
