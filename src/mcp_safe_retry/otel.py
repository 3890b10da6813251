"""OpenTelemetry traces and metrics for retry transports (needs the ``otel`` extra).

The short public path of :mod:`mcp_safe_retry.instrumentation.otel`; importing it imports
``opentelemetry``.
"""

from .instrumentation.otel import DURATION_BUCKETS, OpenTelemetryHook

__all__ = ["DURATION_BUCKETS", "OpenTelemetryHook"]
