"""Observers of attempts and calls, given to a transport as ``hooks=[...]``: the ``Hook``
protocol a custom one follows, ``JsonLinesSink`` (one JSON line per call) and ``LoggingHook``
(the ``mcp_safe_retry`` logger, installed by default). OpenTelemetry's is
``mcp_safe_retry.otel.OpenTelemetryHook``.
"""

from .core.hooks import Hook
from .instrumentation.jsonlines import JsonLinesSink
from .instrumentation.logs import LoggingHook

__all__ = ["Hook", "JsonLinesSink", "LoggingHook"]
