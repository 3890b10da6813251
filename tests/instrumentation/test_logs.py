"""The built-in logging hook: one DEBUG line per attempt, one line per decision."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import mcp_safe_retry
import mcp_safe_retry.hooks
import mcp_safe_retry.records
from mcp_safe_retry.core import ledger
from mcp_safe_retry.core.attempt_kinds import AttemptKind
from mcp_safe_retry.core.decision import Decision, Reason
from mcp_safe_retry.core.outcomes import Outcome, verdict
from mcp_safe_retry.core.records import RetryOrigin, Seen
from mcp_safe_retry.instrumentation import logs as _logging
from mcp_safe_retry.instrumentation.logs import FIELDS, LoggingHook, error_type
from tests.instrumentation.support import (
    FakeClock,
    Server,
    call,
    raise_error,
    result,
    rpc_error,
    status,
    transport,
)

LOGGER = "mcp_safe_retry"
SUCCESS, NOT_RETRYABLE = Decision.stop(Reason.SUCCESS), Decision.stop(Reason.NOT_RETRYABLE)
RETRY = Decision(retry=True, reason=Reason.NETWORK_ERROR, delay=0.1)


def mine(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER]


def test_retried_read_logs_each_attempt_and_each_decision(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    server = Server(FakeClock(), [status(503), status(503), result({"tools": []})])
    with httpx.Client(transport=transport(server)) as client:
        assert call(client, "tools/list", 7).status_code == 200

    records = mine(caplog)
    levels = [r.levelname for r in records]
    assert levels == ["DEBUG", "INFO", "DEBUG", "INFO", "DEBUG", "INFO"]
    messages = [r.getMessage() for r in records]
    assert messages[0] == (
        "tools/list id=7 attempt 1 -> HTTP_ERROR (transport layer, HTTP 503) in 5.0 ms"
    )
    assert messages[1] == (
        "tools/list id=7 retrying in 0.200 s after attempt 1: HTTP_ERROR (retryable_status)"
    )
    assert messages[3] == (
        "tools/list id=7 retrying in 0.400 s after attempt 2: HTTP_ERROR (retryable_status)"
    )
    assert messages[5] == "tools/list id=7 done after 3 attempts: RPC_SUCCESS (success)"

    for record in records:
        for field in FIELDS:
            assert hasattr(record, field), field
    retry, last = records[1], records[5]
    fields = {f: getattr(retry, f) for f in FIELDS}
    assert fields == {
        "mcp_method": "tools/list",
        "mcp_tool": None,
        "jsonrpc_id": 7,
        "wire_id": 7,
        "attempt": 1,
        "retry_origin": "none",
        "outcome": "HTTP_ERROR",
        "layer": "transport",
        "http_status": 503,
        "error_code": None,
        "error_type": "HTTP_ERROR",
        "error_kind": None,
        "error_message": None,
        "decision": "retry",
        "reason": "retryable_status",
        "delay": 0.2,
        "elapsed_ms": 0.0,
        "duration_ms": 5.0,
        "scenario": None,
    }
    assert last.attempt == 3  # type: ignore[attr-defined]
    assert last.retry_origin == "sdk"  # type: ignore[attr-defined]
    assert str(last.wire_id).startswith("mcp-safe-retry-")  # type: ignore[attr-defined]
    assert last.decision == "stop"  # type: ignore[attr-defined]
    assert last.delay is None  # type: ignore[attr-defined]
    assert last.elapsed_ms == pytest.approx(5 + 200 + 5 + 400)  # type: ignore[attr-defined]


def test_first_attempt_success_is_quiet_at_info(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    server = Server(FakeClock(), [result({})])
    with httpx.Client(transport=transport(server)) as client:
        call(client, "ping")
    assert mine(caplog) == []

    caplog.clear()
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    server.script(result({}))
    with httpx.Client(transport=transport(server)) as client:
        call(client, "ping")
    assert [(r.levelname, r.getMessage()) for r in mine(caplog)] == [
        (
            "DEBUG",
            "ping id=1 attempt 1 -> RPC_SUCCESS (protocol layer, HTTP 200) in 5.0 ms",
        ),
        ("DEBUG", "ping id=1 done after 1 attempt: RPC_SUCCESS (success)"),
    ]


def test_a_failed_call_logs_its_stop_at_info(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    server = Server(FakeClock(), [status(503), rpc_error(-32602, "Unknown tool: nope")])
    with httpx.Client(transport=transport(server)) as client:
        call(client, "tools/call", 3, name="nope", arguments={})
        call(client, "tools/call", 4, name="nope", arguments={})
    records = mine(caplog)
    assert [r.getMessage() for r in records] == [
        "tools/call nope id=3 done after 1 attempt: HTTP_ERROR (not_idempotent)",
        "tools/call nope id=4 done after 1 attempt: JSONRPC_ERROR (not_retryable)",
    ]
    assert records[1].error_type == "-32602"  # type: ignore[attr-defined]
    assert records[1].error_message == "Unknown tool: nope"  # type: ignore[attr-defined]
    assert records[1].mcp_tool == "nope"  # type: ignore[attr-defined]


def test_network_error_line_names_the_kind(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    server = Server(
        FakeClock(), [raise_error(httpx.ConnectError("connection refused")), result({})]
    )
    with httpx.Client(transport=transport(server)) as client:
        call(client, "ping")
    first = mine(caplog)[0]
    assert first.getMessage() == (
        "ping id=1 attempt 1 -> NETWORK_ERROR "
        "(transport layer: ConnectError: connection refused) in 5.0 ms"
    )
    assert first.error_kind == "connect"  # type: ignore[attr-defined]
    assert first.error_type == "NETWORK_ERROR"  # type: ignore[attr-defined]


def test_disabled_logger_costs_one_check(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)

    def boom(*_args: object) -> dict[str, object]:
        raise AssertionError("fields built while the logger is off")

    monkeypatch.setattr(LoggingHook, "_fields", boom)
    server = Server(FakeClock(), [status(503), result({})])
    with httpx.Client(transport=transport(server)) as client:
        assert call(client, "ping").status_code == 200
    assert mine(caplog) == []  # not even a "hook failed" line


def test_logging_hook_is_built_in_and_first() -> None:
    user_hook = mcp_safe_retry.hooks.JsonLinesSink(sys.stderr)
    t = mcp_safe_retry.RetryTransport(
        httpx.MockTransport(lambda r: httpx.Response(200)), hooks=[user_hook]
    )
    hooks = t.engine.hooks
    assert isinstance(hooks[0], LoggingHook)
    assert hooks[1:] == (user_hook,)
    assert isinstance(hooks[0], mcp_safe_retry.hooks.Hook)


def test_a_logging_failure_never_breaks_a_call(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)

    def boom(*_args: object) -> str:
        raise RuntimeError("formatter exploded")

    monkeypatch.setattr(_logging, "_target", boom)
    server = Server(FakeClock(), [result({})])
    with httpx.Client(transport=transport(server)) as client:
        assert call(client, "ping").status_code == 200
    assert any("failed in on_attempt" in r.getMessage() for r in mine(caplog))


@pytest.mark.parametrize(
    ("outcome", "kwargs", "expected"),
    [
        (mcp_safe_retry.records.Outcome.RPC_SUCCESS, {}, None),
        (mcp_safe_retry.records.Outcome.TOOL_SUCCESS, {}, None),
        (mcp_safe_retry.records.Outcome.ACCEPTED, {}, None),
        (mcp_safe_retry.records.Outcome.INPUT_REQUIRED, {}, None),
        (mcp_safe_retry.records.Outcome.TOOL_ERROR, {}, "tool_error"),
        (mcp_safe_retry.records.Outcome.JSONRPC_ERROR, {"code": -32603}, "-32603"),
        (mcp_safe_retry.records.Outcome.HTTP_ERROR, {"status": 400, "code": -32600}, "-32600"),
        (mcp_safe_retry.records.Outcome.HTTP_ERROR, {"status": 503}, "HTTP_ERROR"),
        (mcp_safe_retry.records.Outcome.NETWORK_ERROR, {}, "NETWORK_ERROR"),
        (mcp_safe_retry.records.Outcome.STREAM_INCOMPLETE, {}, "STREAM_INCOMPLETE"),
        (mcp_safe_retry.records.Outcome.MALFORMED_JSON, {}, "MALFORMED_JSON"),
    ],
)
def test_error_type(
    outcome: mcp_safe_retry.records.Outcome, kwargs: dict[str, int], expected: str | None
) -> None:
    from mcp_safe_retry.core.outcomes import verdict

    assert error_type(verdict(outcome, **kwargs)) == expected
    assert error_type(None) is None


def test_core_never_imports_opentelemetry() -> None:
    code = (
        "import sys, httpx, mcp_safe_retry, mcp_safe_retry.instrumentation.jsonlines, mcp_safe_retry.instrumentation.logs\n"
        "t = mcp_safe_retry.RetryTransport(httpx.MockTransport(lambda r: httpx.Response(200)))\n"
        "assert not [m for m in sys.modules if m.startswith('opentelemetry')], 'imported'\n"
    )
    src = str(Path(mcp_safe_retry.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def test_healthy_calls_cost_nothing_at_info(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)

    def boom(*_args: object) -> dict[str, object]:
        raise AssertionError("fields built for a line nobody will see")

    monkeypatch.setattr(LoggingHook, "_fields", boom)
    server = Server(FakeClock(), [result({}), result({"content": []})])
    with httpx.Client(transport=transport(server)) as client:
        call(client, "ping")
        call(client, "tools/call", 2, name="t", arguments={})
    assert mine(caplog) == []


def test_the_hook_is_enabled_while_its_logger_logs_info_as_the_level_moves() -> None:
    log = logging.getLogger("mcp_safe_retry.test_enabled")
    hook = LoggingHook(log)
    try:
        log.setLevel(logging.WARNING)
        assert not hook.enabled()
        log.setLevel(logging.INFO)
        assert hook.enabled()  # the logger's own check, asked each time
        log.disabled = True
        assert not hook.enabled()
    finally:
        log.disabled = False
        log.setLevel(logging.NOTSET)


def test_healthy_calls_build_no_record_for_the_logging_hook_at_info(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[object] = []
    real = ledger._built

    def counting(snapshot: ledger.Snapshot) -> mcp_safe_retry.records.CallRecord:
        built.append(snapshot)
        return real(snapshot)

    monkeypatch.setattr(ledger, "_built", counting)
    caplog.set_level(logging.INFO, logger=LOGGER)
    server = Server(FakeClock(), [result({}), result({"content": []})])
    with httpx.Client(transport=transport(server)) as client:
        call(client, "ping")
        call(client, "tools/call", 2, name="t", arguments={})
    assert built == []  # the hook said, from the attempt's facts, it would log nothing
    # A call with something to say at INFO is told, its record built, its lines the same.
    server.script(status(503), result({}))
    with httpx.Client(transport=transport(server)) as client:
        call(client, "ping", 3)
    assert [r.getMessage() for r in mine(caplog)] == [
        "ping id=3 retrying in 0.200 s after attempt 1: HTTP_ERROR (retryable_status)",
        "ping id=3 done after 2 attempts: RPC_SUCCESS (success)",
    ]
    assert len(built) == 2
    # At DEBUG every attempt has its line: a healthy call is told too.
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    server.script(result({}))
    with httpx.Client(transport=transport(server)) as client:
        call(client, "ping", 4)
    assert len(built) == 3


@pytest.mark.parametrize(
    ("number", "outcome", "decision", "level", "wanted"),
    [
        pytest.param(1, Outcome.RPC_SUCCESS, SUCCESS, logging.INFO, False, id="quiet"),
        pytest.param(1, Outcome.RPC_SUCCESS, SUCCESS, logging.DEBUG, True, id="quiet-debug"),
        pytest.param(2, Outcome.RPC_SUCCESS, SUCCESS, logging.INFO, True, id="after-a-retry"),
        pytest.param(1, Outcome.HTTP_ERROR, NOT_RETRYABLE, logging.INFO, True, id="failed"),
        pytest.param(1, Outcome.NETWORK_ERROR, RETRY, logging.INFO, True, id="retried"),
        pytest.param(1, Outcome.TOOL_SUCCESS, None, logging.INFO, False, id="copy-no-decision"),
    ],
)
def test_the_logging_hook_wants_what_it_would_log(
    number: int, outcome: Outcome, decision: Decision | None, level: int, wanted: bool
) -> None:
    log = logging.getLogger("mcp_safe_retry.test_wants")
    hook = LoggingHook(log)
    seen = Seen(
        number,
        RetryOrigin.NONE,
        1,
        verdict(outcome),
        None,
        None,
        0.0,
        None,
        decision,
        0.0,
        1.0,
        AttemptKind.POST,
    )
    try:
        log.setLevel(level)
        assert hook.wants(seen) is wanted
    finally:
        log.setLevel(logging.NOTSET)
