"""``GET /metrics``: the OpenTelemetry metrics of the gateway's calls, in Prometheus's text
format (needs the ``otel`` extra).

The ``OpenTelemetryHook`` the gateway installs reports to a meter provider of its own whose
reader this module renders when scraped: counters as ``NAME_total``, histograms as
``NAME_bucket`` / ``NAME_sum`` / ``NAME_count``, the dots of OpenTelemetry's names as
underscores. Its labels are the hook's own, low-cardinality and free of secrets (method,
tool, outcome, decision, reason).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    Gauge,
    Histogram,
    InMemoryMetricReader,
    Metric,
    Sum,
)

__all__ = ["PrometheusMetrics"]

_INVALID = re.compile(r"[^a-zA-Z0-9_]")


class PrometheusMetrics:
    """A meter provider for the hook, and its metrics as Prometheus text (call it)."""

    def __init__(self) -> None:
        self._reader = InMemoryMetricReader()
        self.provider = MeterProvider(metric_readers=[self._reader])

    def __call__(self) -> bytes:
        lines: list[str] = []
        data = self._reader.get_metrics_data()
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    lines.extend(_metric_lines(metric))
        return ("\n".join(lines) + "\n").encode()


def _metric_lines(metric: Metric) -> list[str]:
    name = _INVALID.sub("_", metric.name)
    data = metric.data
    lines = [f"# HELP {name} {metric.description or metric.name}"]
    if isinstance(data, Sum):
        kind = "counter" if data.is_monotonic else "gauge"
        lines.append(f"# TYPE {name} {kind}")
        suffix = "_total" if data.is_monotonic else ""
        lines += [f"{name}{suffix}{_labels(p.attributes)} {p.value}" for p in data.data_points]
    elif isinstance(data, Histogram):
        lines.append(f"# TYPE {name} histogram")
        for point in data.data_points:
            running = 0
            bounds = [*point.explicit_bounds, math.inf]
            for bound, count in zip(bounds, point.bucket_counts, strict=True):
                running += count
                le = "+Inf" if bound == math.inf else repr(float(bound))
                lines.append(f"{name}_bucket{_labels(point.attributes, le=le)} {running}")
            lines.append(f"{name}_sum{_labels(point.attributes)} {point.sum}")
            lines.append(f"{name}_count{_labels(point.attributes)} {point.count}")
    elif isinstance(data, Gauge):
        lines.append(f"# TYPE {name} gauge")
        lines += [f"{name}{_labels(p.attributes)} {p.value}" for p in data.data_points]
    return lines  # exponential histograms: none of the hook's


def _labels(attributes: Mapping[str, Any] | None, **more: str) -> str:
    pairs = {**(attributes or {}), **more}
    if not pairs:
        return ""
    inner = ",".join(f'{_INVALID.sub("_", str(k))}="{_escaped(v)}"' for k, v in pairs.items())
    return "{" + inner + "}"


def _escaped(value: object) -> str:
    return str(value).replace("\\", r"\\").replace('"', r"\"").replace("\n", r"\n")
