"""The public surface: exported names, every Outcome reachable, generated shells current."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

import mcp_safe_retry
from mcp_safe_retry import Outcome, RetryTransport, classify, get_record
from mcp_safe_retry.core.breaker import circuit_open

ROOT = Path(__file__).resolve().parent.parent


def test_exported_members() -> None:
    public = {
        name
        for name, value in vars(mcp_safe_retry).items()
        if not name.startswith("_") and not isinstance(value, type(mcp_safe_retry))
    }
    assert public | {"__version__"} == set(mcp_safe_retry.__all__)
    for name in mcp_safe_retry.__all__:
        assert hasattr(mcp_safe_retry, name)
    contract = {
        "Layer",
        "Outcome",
        "Classification",
        "classify",
        "RetryPolicy",
        "Idempotency",
        "Jitter",
        "RetryTransport",
        "AsyncRetryTransport",
        "CallRecord",
        "Attempt",
        "RetryOrigin",
        "History",
        "get_record",
        "retry_origin",
    }
    assert contract <= set(mcp_safe_retry.__all__)


def test_enum_values() -> None:
    assert [layer.value for layer in mcp_safe_retry.Layer] == [
        "transport",
        "protocol",
        "interaction",
        "application",
    ]
    assert all(o.value == o.name for o in Outcome)
    assert [o.value for o in mcp_safe_retry.RetryOrigin] == ["none", "sdk", "application", "manual"]


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
