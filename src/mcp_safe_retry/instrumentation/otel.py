"""OpenTelemetry traces and metrics for retry transports (needs the ``otel`` extra).

``OpenTelemetryHook`` records one CLIENT span per logical MCP call, named
``{mcp.method.name} {gen_ai.tool.name}`` (the method alone when there is no tool), with one
child CLIENT span ``POST`` per HTTP attempt, following the OpenTelemetry MCP and HTTP client
semantic conventions. Hooks hear of a call only once it has happened, so spans are made
afterwards with explicit timestamps: the call from ``record.started_at`` for
``record.duration``; each attempt from ``started_at + attempt.elapsed`` for
``attempt.duration``. They are parented to the span current when the call completes (the
caller's, for calls made inside one) but never become current themselves.

Metrics: ``mcp_safe_retry.attempts`` (counter, by method, tool, outcome, decision and reason),
``mcp_safe_retry.retry.delay`` (histogram of the waits before retries, seconds) and
``mcp.client.operation.duration`` (histogram of whole calls, retries included, seconds).

The core package never imports this module; importing it imports ``opentelemetry``.
"""

from __future__ import annotations

import functools
from importlib import metadata
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from ..core.attempt_kinds import AttemptKind
from ..core.live import Live
from ..core.outcomes import Classification
from ..core.records import Attempt, CallRecord, target
from .hooks import NAME
from .logs import error_type
from .redact import MESSAGE_CHARS, Redactor, short_text

__all__ = ["DURATION_BUCKETS", "OpenTelemetryHook"]

DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""Bucket boundaries (seconds) the MCP conventions advise for operation durations."""


def _scope_version() -> str:
    """The installed distribution's version, for the instrumentation scope (read from its
    metadata, not from the package's face: instrumentation never imports upward); empty
    when the package runs uninstalled."""
    try:
        return metadata.version("mcp-safe-retry")
    except metadata.PackageNotFoundError:
        return ""


_Attributes = dict[str, AttributeValue]


class OpenTelemetryHook(Live):
    """A hook that turns call records into spans and metrics.

    Args:
        tracer_provider: where spans go (default: the global provider).
        meter_provider: where metrics go (default: the global provider).
        redact: called with each span's attributes and the CallRecord before the span is
            made; returns the attributes to use (drop keys to hide more, add from the
            record to show more) or None to make no span (for the call span: no spans at
            all for that call). If it raises, no span is made. Metrics carry only
            low-cardinality values and are not passed through it.
        max_message_chars: characters of a (scrubbed) server error text kept as a span's
            status description; 0 keeps none.

    Attributes, on the call span: ``mcp.method.name``, ``gen_ai.tool.name`` and
    ``gen_ai.operation.name`` (``execute_tool``) for tools, ``jsonrpc.request.id`` (the
    caller's id), ``mcp.session.id``, ``mcp.protocol.version``, ``network.transport``,
    ``network.protocol.name``, ``error.type`` (the JSON-RPC error code as a string,
    ``tool_error``, or the outcome such as ``HTTP_ERROR``), ``rpc.response.status_code``
    (the JSON-RPC error code) and ``mcp_safe_retry.*``: ``outcome``, ``layer``, ``idempotency``,
    ``attempt_count``, ``retry_origin`` (who sent the first attempt: ``none`` or an
    application re-send), ``reason`` (why the call stopped), ``result_type``, ``client``
    and ``scenario``.

    On each attempt span: ``http.request.method``, ``http.response.status_code``,
    ``http.request.resend_count`` (from the second attempt on), ``error.type`` (the HTTP
    status as a string from 400 up, else as on the call span), ``jsonrpc.request.id`` (the
    id this attempt went out under: retries use fresh ones) and ``mcp_safe_retry.*``:
    ``attempt``, ``outcome``, ``layer``, ``retry_origin``, ``backoff`` (seconds waited
    before it), ``decision``, ``reason``, ``next_delay``, ``retry_after``, ``error_kind``,
    ``content_type``, ``attempt_kind`` (``hedge`` or ``resume``; absent for a plain POST)
    and ``fate`` (a hedged call's copy: ``won``, ``failed``, ``lost`` or ``abandoned``).
    The copies of a hedged call are sibling spans that overlap in time.

    Failed calls and attempts get status ERROR. No span holds a header, a URL or a tool
    argument.

    Shared, never copied: ``copy.deepcopy`` returns this hook (a copy would deep-copy the
    providers it was given). One on the global providers pickles as such: loaded in another
    process, it reports to that process's global providers. One given providers cannot be
    pickled (``TypeError``): they cannot follow it.

    Attributes:
        tracer: the OpenTelemetry tracer the spans are started from.
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        *,
        redact: Redactor | None = None,
        max_message_chars: int = MESSAGE_CHARS,
    ) -> None:
        self.tracer = trace.get_tracer(NAME, _scope_version(), tracer_provider)
        meter = metrics.get_meter(NAME, _scope_version(), meter_provider)
        self._attempts = meter.create_counter(
            "mcp_safe_retry.attempts",
            unit="{attempt}",
            description="HTTP attempts of MCP calls, by outcome and the decision that followed.",
        )
        self._delays = meter.create_histogram(
            "mcp_safe_retry.retry.delay",
            unit="s",
            description="Seconds waited before re-sending a call.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self._durations = meter.create_histogram(
            "mcp.client.operation.duration",
            unit="s",
            description="Duration of an MCP call from the first send to its answer, "
            "retries included.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self._redact = redact
        self._max_message_chars = max_message_chars
        self._own_providers = tracer_provider is not None or meter_provider is not None

    def __repr__(self) -> str:
        return "OpenTelemetryHook()"

    def _recipe(self) -> functools.partial[OpenTelemetryHook]:
        if self._own_providers:
            raise TypeError(
                "cannot pickle an OpenTelemetryHook given its own tracer or meter provider: "
                "they cannot follow it to another process; build the hook there"
            )
        return functools.partial(
            OpenTelemetryHook, redact=self._redact, max_message_chars=self._max_message_chars
        )

    # -- the hook ---------------------------------------------------------------------

    def on_attempt(self, record: CallRecord, attempt: Attempt) -> None:
        c = attempt.classification
        decision = attempt.decision
        labels = _base_labels(record)
        labels["mcp_safe_retry.outcome"] = str(c.outcome)
        if decision is not None:
            labels["mcp_safe_retry.decision"] = str(decision.action)
            labels["mcp_safe_retry.reason"] = str(decision.reason)
        self._attempts.add(1, labels)
        if decision is not None and decision.retry:
            delay_labels = _base_labels(record)
            delay_labels["mcp_safe_retry.reason"] = str(decision.reason)
            self._delays.record(decision.delay, delay_labels)

    def on_call(self, record: CallRecord) -> None:
        labels = _base_labels(record)
        kind = error_type(record.classification)
        if kind is not None:
            labels["error.type"] = kind
        if record.protocol_version:
            labels["mcp.protocol.version"] = record.protocol_version
        if record.outcome is not None:
            labels["mcp_safe_retry.outcome"] = record.outcome
        self._durations.record(record.duration, labels)
        self._spans(record)

    # -- spans --------------------------------------------------------------------------

    def _spans(self, record: CallRecord) -> None:
        attributes = self._redacted(call_attributes(record), record)
        if attributes is None:
            return
        start = _ns(record.started_at)
        end = start + _ns(record.duration)
        span = self.tracer.start_span(
            span_name(record), kind=SpanKind.CLIENT, attributes=attributes, start_time=start
        )
        try:
            parent = trace.set_span_in_context(span)
            for attempt in record.attempts:
                self._attempt_span(record, attempt, parent, start, end)
            self._set_status(span, record.classification)
        finally:
            span.end(end_time=end)

    def _attempt_span(
        self, record: CallRecord, attempt: Attempt, parent: Any, call_start: int, call_end: int
    ) -> None:
        attributes = self._redacted(attempt_attributes(attempt), record)
        if attributes is None:
            return
        start = min(call_start + _ns(attempt.elapsed), call_end)
        end = min(start + _ns(attempt.duration), call_end)
        span = self.tracer.start_span(
            "POST", context=parent, kind=SpanKind.CLIENT, attributes=attributes, start_time=start
        )
        try:
            self._set_status(span, attempt.classification, attempt.status)
        finally:
            span.end(end_time=end)

    def _set_status(
        self, span: trace.Span, c: Classification | None, status: int | None = None
    ) -> None:
        if error_type(c) is None and (status is None or status < 400):
            return
        text = short_text(c.message or c.detail, self._max_message_chars) if c else None
        span.set_status(Status(StatusCode.ERROR, text))

    def _redacted(self, attributes: _Attributes, record: CallRecord) -> _Attributes | None:
        if self._redact is None:
            return attributes
        return self._redact(attributes, record)


def span_name(record: CallRecord) -> str:
    """``{mcp.method.name} {gen_ai.tool.name}``, or the method alone."""
    return target(record)


def call_attributes(record: CallRecord) -> _Attributes:
    """The attributes of a call's span (see OpenTelemetryHook)."""
    c = record.classification
    out = _base_labels(record)
    if record.tool is not None:
        out["gen_ai.operation.name"] = "execute_tool"
    if record.request_id is not None:
        out["jsonrpc.request.id"] = str(record.request_id)
    if record.session_id:
        out["mcp.session.id"] = record.session_id
    if record.protocol_version:
        out["mcp.protocol.version"] = record.protocol_version
    out["network.transport"] = "tcp"
    out["network.protocol.name"] = "http"
    kind = error_type(c)
    if kind is not None:
        out["error.type"] = kind
    if c is not None and c.code is not None:
        out["rpc.response.status_code"] = str(c.code)
    if c is not None:
        out["mcp_safe_retry.outcome"] = str(c.outcome)
        out["mcp_safe_retry.layer"] = str(c.layer)
        if c.result_type is not None:
            out["mcp_safe_retry.result_type"] = c.result_type
    out["mcp_safe_retry.idempotency"] = str(record.idempotency)
    out["mcp_safe_retry.attempt_count"] = record.post_count
    if record.attempts:
        out["mcp_safe_retry.retry_origin"] = str(record.attempts[0].retry_origin)
        last = record.attempts[-1].decision
        if last is not None:
            out["mcp_safe_retry.reason"] = str(last.reason)
    if record.client:
        out["mcp_safe_retry.client"] = record.client
    if record.scenario:
        out["mcp_safe_retry.scenario"] = record.scenario
    return out


def attempt_attributes(attempt: Attempt) -> _Attributes:
    """The attributes of one attempt's span (see OpenTelemetryHook)."""
    c = attempt.classification
    out: _Attributes = {"http.request.method": "POST"}
    if attempt.status is not None:
        out["http.response.status_code"] = attempt.status
    if attempt.number > 1:
        out["http.request.resend_count"] = attempt.number - 1
    kind = str(attempt.status) if attempt.status and attempt.status >= 400 else error_type(c)
    if kind is not None:
        out["error.type"] = kind
    if attempt.wire_id is not None:
        out["jsonrpc.request.id"] = str(attempt.wire_id)
    out["mcp_safe_retry.attempt"] = attempt.number
    if attempt.kind != AttemptKind.POST:
        out["mcp_safe_retry.attempt_kind"] = str(attempt.kind)
    if attempt.fate is not None:
        out["mcp_safe_retry.fate"] = attempt.fate
    out["mcp_safe_retry.outcome"] = str(c.outcome)
    out["mcp_safe_retry.layer"] = str(c.layer)
    out["mcp_safe_retry.retry_origin"] = str(attempt.retry_origin)
    out["mcp_safe_retry.backoff"] = attempt.delay
    decision = attempt.decision
    if decision is not None:
        out["mcp_safe_retry.decision"] = str(decision.action)
        out["mcp_safe_retry.reason"] = str(decision.reason)
        if decision.retry:
            out["mcp_safe_retry.next_delay"] = decision.delay
    if attempt.retry_after is not None:
        out["mcp_safe_retry.retry_after"] = attempt.retry_after
    if attempt.error_kind is not None:
        out["mcp_safe_retry.error_kind"] = attempt.error_kind
    if attempt.content_type is not None:
        out["mcp_safe_retry.content_type"] = attempt.content_type[:100]
    return out


def _base_labels(record: CallRecord) -> _Attributes:
    out: _Attributes = {"mcp.method.name": record.method}
    if record.tool is not None:
        out["gen_ai.tool.name"] = record.tool
    return out


def _ns(seconds: float) -> int:
    return round(seconds * 1_000_000_000)
