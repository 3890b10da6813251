"""The built-in hook that logs every attempt and every decision to the ``mcp_safe_retry`` logger.

Every transport has it, ahead of the user's hooks. It costs one ``isEnabledFor`` check per
attempt while the logger is off (the default: only a NullHandler is attached).

* DEBUG, one line per attempt: how it ended.
* INFO, one line per decision: each retry, and the stop that ends a call, except that a
  call that succeeded at its first attempt logs its stop at DEBUG, so INFO stays quiet for
  healthy traffic (and such a call builds no record for this hook: ``wants``).

Each line carries structured ``extra`` fields (see ``FIELDS``) for JSON log formatters. No
line holds a header, a URL, a tool argument or more than ``MESSAGE_CHARS`` scrubbed
characters of a server's error text. To hide more, use a ``logging.Filter``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from ..core.decision import Decision
from ..core.live import Live
from ..core.outcomes import NOT_FAILURES, Classification, Outcome
from ..core.records import Attempt, CallRecord, Seen, target
from .hooks import logger
from .redact import MESSAGE_CHARS, short_text

__all__ = ["FIELDS", "LOGGING_HOOK", "LoggingHook", "error_type"]

FIELDS = (
    "mcp_method",
    "mcp_tool",
    "jsonrpc_id",
    "wire_id",
    "attempt",
    "retry_origin",
    "outcome",
    "layer",
    "http_status",
    "error_code",
    "error_type",
    "error_kind",
    "error_message",
    "decision",
    "reason",
    "delay",
    "elapsed_ms",
    "duration_ms",
    "scenario",
)
"""The ``extra`` keys set on every log record this hook emits."""


def error_type(classification: Classification | None) -> str | None:
    """The low-cardinality name of a failure, as OpenTelemetry's ``error.type`` wants it.

    The JSON-RPC error code as a string when there is one (also inside a non-2xx body),
    ``tool_error`` for a tool result with ``isError``, else the outcome (``HTTP_ERROR``,
    ``NETWORK_ERROR``, ...); None for a success or an ``input_required`` result.
    """
    if classification is None or classification.outcome in NOT_FAILURES:
        return None
    if classification.code is not None:
        return str(classification.code)
    if classification.outcome is Outcome.TOOL_ERROR:
        return "tool_error"
    return str(classification.outcome)


class LoggingHook(Live):
    """Logs attempts at DEBUG and decisions at INFO (see the module documentation).

    Copied, it is itself; pickled, it logs to the logger of the same name (as a pickled
    ``logging.Logger`` is the logger of that name).
    """

    def __init__(
        self, log: logging.Logger = logger, *, max_message_chars: int = MESSAGE_CHARS
    ) -> None:
        self._log = log
        self._max_message_chars = max_message_chars
        # Whether this hook has anything to log (the engine skips it, and the record it
        # would be shown, while it has not): asked after every attempt, so the logger's
        # own check, bound once (no frame of ours around it).
        self.enabled: Callable[[], bool] = functools.partial(log.isEnabledFor, logging.INFO)

    def __repr__(self) -> str:
        return f"LoggingHook({self._log.name!r})"

    def _recipe(self) -> functools.partial[LoggingHook]:
        return functools.partial(LoggingHook, self._log, max_message_chars=self._max_message_chars)

    def wants(self, attempt: Seen) -> bool:
        """Whether it logs anything about ``attempt`` (the engine asks while the logger is
        on at INFO, before a record is built): at DEBUG every attempt, at INFO all but a
        quiet one (``_quiet``). ``on_call`` logs nothing, so a call it is not told of
        loses no line."""
        quiet = _quiet(attempt.number, attempt.classification.outcome, attempt.decision)
        return not quiet or self._log.isEnabledFor(logging.DEBUG)

    def on_attempt(self, record: CallRecord, attempt: Attempt) -> None:
        log = self._log
        if not log.isEnabledFor(logging.INFO):
            return
        c = attempt.classification
        decision = attempt.decision
        debug = log.isEnabledFor(logging.DEBUG)
        quiet = _quiet(attempt.number, c.outcome, decision)
        if quiet and not debug:
            return  # healthy traffic: nothing to say at INFO
        extra = self._fields(record, attempt)
        target = _target(record)
        if debug:
            where = f"{c.layer} layer"
            if attempt.status is not None:
                where += f", HTTP {attempt.status}"
            if c.code is not None:
                where += f", code {c.code}"
            if extra["error_message"]:
                where += f": {extra['error_message']}"
            log.debug(
                "%s attempt %d -> %s (%s) in %.1f ms",
                target,
                attempt.number,
                c.outcome,
                where,
                attempt.duration * 1000,
                extra=extra,
            )
        if decision is None:
            return
        if decision.retry:
            log.info(
                "%s retrying in %.3f s after attempt %d: %s (%s)",
                target,
                decision.delay,
                attempt.number,
                c.outcome,
                decision.reason,
                extra=extra,
            )
            return
        log.log(
            logging.DEBUG if quiet else logging.INFO,
            "%s done after %d attempt%s: %s (%s)",
            target,
            attempt.number,
            "" if attempt.number == 1 else "s",
            c.outcome,
            decision.reason,
            extra=extra,
        )

    def on_call(self, record: CallRecord) -> None:
        """Nothing: the last attempt's stop line already told the end of the call."""

    def _fields(self, record: CallRecord, attempt: Attempt) -> dict[str, Any]:
        c = attempt.classification
        decision = attempt.decision
        return {
            "mcp_method": record.method,
            "mcp_tool": record.tool,
            "jsonrpc_id": record.request_id,
            "wire_id": attempt.wire_id,
            "attempt": attempt.number,
            "retry_origin": str(attempt.retry_origin),
            "outcome": str(c.outcome),
            "layer": str(c.layer),
            "http_status": attempt.status,
            "error_code": c.code,
            "error_type": error_type(c),
            "error_kind": attempt.error_kind,
            "error_message": short_text(c.message or c.detail, self._max_message_chars),
            "decision": str(decision.action) if decision else None,
            "reason": str(decision.reason) if decision else None,
            "delay": decision.delay if decision and decision.retry else None,
            "elapsed_ms": round(attempt.elapsed * 1000, 3),
            "duration_ms": round(attempt.duration * 1000, 3),
            "scenario": record.scenario,
        }


LOGGING_HOOK = LoggingHook()
"""The logging hook every transport installs ahead of the user's hooks."""


def _quiet(number: int, outcome: Outcome, decision: Decision | None) -> bool:
    """A first attempt that succeeded and is not retried: INFO says nothing of it."""
    return number == 1 and outcome in NOT_FAILURES and not (decision is not None and decision.retry)


def _target(record: CallRecord) -> str:
    name = target(record)
    return name if record.request_id is None else f"{name} id={record.request_id}"
