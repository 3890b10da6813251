"""The public surface: exported names, every Outcome reachable, generated shells current."""

from __future__ import annotations

import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

import mcp_safe_retry
import mcp_safe_retry.records
from mcp_safe_retry import RetryTransport, classify, get_record
from mcp_safe_retry.core.breaker import circuit_open
from mcp_safe_retry.records import Outcome

ROOT = Path(__file__).resolve().parent.parent


SURFACE = {
    "mcp_safe_retry": {
        "AsyncRetryTransport",
        "BodyTooLarge",
        "Breaker",
        "Budget",
        "CallLedger",
        "CircuitBreaker",
        "CircuitOpenError",
        "DuplicateCallError",
        "History",
        "Idempotency",
        "RetryBudget",
        "RetryPolicy",
        "RetryTransport",
        "__version__",
        "allow_duplicate",
        "classify",
        "get_record",
        "mcp_client",
        "retry_origin",
    },
    "mcp_safe_retry.httpx2": {"AsyncRetryTransport", "RetryTransport", "mcp_client"},
    "mcp_safe_retry.records": {
        "CONTAINED_ERROR_CODE",
        "Attempt",
        "AttemptKind",
        "CallRecord",
        "Classification",
        "Decision",
        "Delivery",
        "ErrorKind",
        "Layer",
        "Outcome",
        "Reason",
        "RetryOrigin",
    },
    "mcp_safe_retry.hooks": {"Hook", "JsonLinesSink", "LoggingHook"},
    "mcp_safe_retry.policy": {
        "MAX_HEDGES",
        "READ_METHODS",
        "AdaptiveDelay",
        "DuplicateGuard",
        "Jitter",
    },
    "mcp_safe_retry.extensions": {
        "ALLOW_DUPLICATE_EXTENSION",
        "CALLER_EXTENSION",
        "IDEMPOTENCY_EXTENSION",
        "ORIGIN_EXTENSION",
        "RECORD_EXTENSION",
    },
    "mcp_safe_retry.tenacity": {"wait_strategy"},
}


@pytest.mark.parametrize("name", sorted(SURFACE))
def test_exported_members(name: str) -> None:
    """Each public namespace exports exactly what it lists, and nothing else is public."""
    module = importlib.import_module(name)
    assert set(module.__all__) == SURFACE[name]
    if name != "mcp_safe_retry.tenacity":  # the namespaces that only gather names
        public = {
            member
            for member, value in vars(module).items()
            if not member.startswith("_") and not isinstance(value, type(mcp_safe_retry))
        }
        assert public <= set(module.__all__)
    for member in module.__all__:
        assert hasattr(module, member)


def test_every_name_is_public_once() -> None:
    """No class or function is exported under two public paths (the extension keys and
    constants are plain values, not counted)."""
    seen: dict[int, str] = {}
    for name, members in SURFACE.items():
        module = importlib.import_module(name)
        for member in members - {"__version__"}:
            value = getattr(module, member)
            if isinstance(value, type) or callable(value):
                where = f"{name}.{member}"
                assert id(value) not in seen or name == "mcp_safe_retry.httpx2", (
                    f"{where} is also {seen[id(value)]}"
                )
                seen[id(value)] = where


@pytest.mark.parametrize("library", ["httpx", "httpx2"])
@pytest.mark.parametrize("failure", ["CircuitOpenError", "DuplicateCallError", "BodyTooLarge"])
def test_one_exception_class_catches_both_flavours(library: str, failure: str) -> None:
    """``mcp_safe_retry.X`` catches the class each flavour raises, which stays an exception
    of its own HTTP library (so an SDK catching that library's errors still catches it)."""
    lib = pytest.importorskip(library)
    module = "errors_httpx" if library == "httpx" else "generated.errors_httpx2"
    raised = getattr(importlib.import_module(f"mcp_safe_retry.shells.{module}"), failure)
    assert issubclass(raised, getattr(mcp_safe_retry, failure))
    own = lib.ReadError if failure == "BodyTooLarge" else lib.TransportError
    assert issubclass(raised, own)
    with pytest.raises(getattr(mcp_safe_retry, failure)):
        raise raised("held", request=lib.Request("POST", "http://mcp.test/"))


def test_enum_values() -> None:
    assert [layer.value for layer in mcp_safe_retry.records.Layer] == [
        "transport",
        "protocol",
        "interaction",
        "application",
    ]
    assert all(o.value == o.name for o in Outcome)
    assert [o.value for o in mcp_safe_retry.records.RetryOrigin] == [
        "none",
        "sdk",
        "application",
        "manual",
    ]


def test_every_outcome_is_produced() -> None:
    ok = b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'
    seen = {
        classify(200, ok).outcome,
        classify(200, ok, method="tools/list").outcome,
        classify(500, ok).outcome,
        classify(200, b'{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}').outcome,
        classify(200, b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}').outcome,
        classify(
            200,
            b'{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"s"}}',
        ).outcome,
        classify(200, b"{").outcome,
        classify(200, b"[]").outcome,
        classify(200, b'{"jsonrpc":"2.0","id":1,"result":{"content":1}}').outcome,
        classify(202, b"", expected_id=None).outcome,
        classify(200, b": only a comment\n\n", content_type="text/event-stream").outcome,
        classify(307, b"").outcome,
    }
    task = b'"taskId":"t","status":"%s","createdAt":"x","lastUpdatedAt":"x","ttlMs":null'
    created = b'{"jsonrpc":"2.0","id":1,"result":{"resultType":"task",' + task % b"working" + b"}}"
    seen.add(classify(200, created, tasks=True).outcome)
    for status in (b"working", b"cancelled"):
        polled = b'{"jsonrpc":"2.0","id":1,"result":{' + task % status + b"}}"
        seen.add(classify(200, polled, method="tasks/get").outcome)

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    transport = RetryTransport(httpx.MockTransport(refuse), sleep=lambda _: None)
    with pytest.raises(httpx.ConnectError):
        httpx.Client(transport=transport).post(
            "http://mcp.test/", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        )
    last = transport.history.last()
    assert last is not None and last.classification is not None
    seen.add(last.classification.outcome)
    seen.add(circuit_open("http://mcp.test/").outcome)  # what a transport records when held back

    def drop(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadError("dropped after sending")

    guarded = RetryTransport(httpx.MockTransport(drop), sleep=lambda _: None)
    charge = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "charge"}}
    with pytest.raises(httpx.ReadError):
        httpx.Client(transport=guarded).post("http://mcp.test/", json=charge)
    with pytest.raises(mcp_safe_retry.DuplicateCallError) as held:  # the same call, re-sent
        httpx.Client(transport=guarded).post("http://mcp.test/", json=charge)
    record = get_record(held.value)
    assert record is not None and record.classification is not None
    seen.add(record.classification.outcome)

    twins: list[Any] = []

    def slow(request: httpx.Request) -> httpx.Response:  # a twin sent while it is in flight
        with pytest.raises(mcp_safe_retry.DuplicateCallError) as twin:
            httpx.Client(transport=RetryTransport()).post("http://slow.test/", json=charge)
        twins.append(get_record(twin.value))
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": {"content": []}})

    httpx.Client(transport=RetryTransport(httpx.MockTransport(slow))).post(
        "http://slow.test/", json=charge
    )
    assert twins[0] is not None and twins[0].classification is not None
    seen.add(twins[0].classification.outcome)
    assert seen == set(Outcome)


def test_generated_shells_are_current() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "unasync.py"), "--check"],
        capture_output=True,
        check=False,
        text=True,
    )
    assert result.returncode == 0, result.stdout


def _unasync() -> Any:
    spec = importlib.util.spec_from_file_location("unasync", ROOT / "scripts" / "unasync.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("change", "rule"),
    [
        pytest.param(("import anyio\n", ""), "UNASYNC rule 'import anyio", id="import-gone"),
        pytest.param(("aiter_bytes", "aiter_raw"), "UNASYNC rule 'aiter_bytes'", id="renamed"),
    ],
)
def test_a_stale_generator_rule_fails_by_name(
    change: tuple[str, str], rule: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unasync = _unasync()
    shells = ROOT / "src" / "mcp_safe_retry" / "shells"
    for source in unasync.SOURCES:
        text = (shells / source).read_text()
        (tmp_path / source).write_text(text.replace(*change))
    monkeypatch.setattr(unasync, "SHELLS", tmp_path)
    with pytest.raises(unasync.StaleRule, match=re.escape(rule)):
        unasync.generated()


def test_get_record_of_a_foreign_response() -> None:
    assert get_record(httpx.Response(200)) is None


def test_py_typed_is_shipped() -> None:
    assert (Path(mcp_safe_retry.__file__).parent / "py.typed").exists()
