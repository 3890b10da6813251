"""JsonLinesSink: one redacted JSON line per finished call, thread-safe, flushed, closable."""

from __future__ import annotations

import io
import json
import logging
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

import mcp_safe_retry
from mcp_safe_retry.hooks import JsonLinesSink
from mcp_safe_retry.records import CallRecord
from tests.instrumentation.support import (
    FakeClock,
    Server,
    call,
    raise_error,
    result,
    status,
    transport,
)


def lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def test_one_line_per_call_in_to_dict_shape(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    server = Server(FakeClock(), [status(503), status(503), result({"tools": []}), result({})])
    retry_transport = transport(server, [sink := JsonLinesSink(path)])
    with sink, httpx.Client(transport=retry_transport) as client:
        call(client, "tools/list", 1)
        sink.flush()  # waits for the writer thread: readable while the sink is still open
        assert len(lines(path.read_text())) == 1
        call(client, "ping", 2)
    written = lines(path.read_text(encoding="utf-8"))
    assert written == [r.to_dict() for r in retry_transport.history.records()]
    first = written[0]
    assert first["method"] == "tools/list"
    assert first["postCount"] == 3
    assert first["httpStatuses"] == [503, 503, 200]
    assert [a["decision"] for a in first["attempts"]] == ["retry", "retry", "stop"]
    assert first["outcome"] == "RPC_SUCCESS"
    assert sink.closed


def test_a_path_is_appended_to(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    path.write_text('{"earlier":true}\n', encoding="utf-8")
    server = Server(FakeClock(), [result({})])
    with JsonLinesSink(str(path)) as sink, httpx.Client(transport=transport(server, [sink])) as c:
        call(c, "ping")
    written = lines(path.read_text())
    assert written[0] == {"earlier": True}
    assert written[1]["method"] == "ping"


def test_a_file_object_is_flushed_but_left_open() -> None:
    buffer = io.StringIO()
    sink = JsonLinesSink(buffer)
    server = Server(FakeClock(), [result({})])
    with httpx.Client(transport=transport(server, [sink])) as client:
        call(client, "ping")
    sink.close()
    sink.close()  # twice is fine
    assert not buffer.closed
    assert lines(buffer.getvalue())[0]["method"] == "ping"


def test_records_after_close_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_safe_retry")
    buffer = io.StringIO()
    sink = JsonLinesSink(buffer)
    sink.close()
    server = Server(FakeClock(), [result({})])
    with httpx.Client(transport=transport(server, [sink])) as client:
        assert call(client, "ping").status_code == 200
    assert buffer.getvalue() == ""
    assert any("JsonLinesSink is closed" in r.getMessage() for r in caplog.records)


def test_owned_file_is_closed(tmp_path: Path) -> None:
    sink = JsonLinesSink(tmp_path / "x.jsonl")
    handle = sink.file
    sink.close()
    assert handle.closed


def test_non_ascii_and_odd_ids_stay_valid_json() -> None:
    buffer = io.StringIO()
    server = Server(FakeClock(), [result({"content": [], "isError": False})])
    sink = JsonLinesSink(buffer)
    with httpx.Client(transport=transport(server, [sink])) as client:
        call(client, "tools/call", "id-☃-\n", name="météo", arguments={"q": "☃"})
    sink.flush()
    (line,) = lines(buffer.getvalue())
    assert line["tool"] == "météo"
    assert line["jsonrpc"]["id"] == "id-☃-\n"
    assert buffer.getvalue().count("\n") == 1


def test_thread_safe_under_concurrent_calls() -> None:
    buffer = io.StringIO()
    sink = JsonLinesSink(buffer)
    record = CallRecord(
        method="tools/list",
        tool=None,
        request_id=1,
        idempotency=mcp_safe_retry.Idempotency.READ,
        complete=True,
    )
    threads = 8
    per_thread = 200
    barrier = threading.Barrier(threads)

    def worker(n: int) -> None:
        barrier.wait()
        for i in range(per_thread):
            sink.on_call(record.__class__(**{**_fields(record), "request_id": n * 1000 + i}))

    pool = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    sink.flush()
    written = lines(buffer.getvalue())
    assert len(written) == threads * per_thread
    ids = sorted(d["jsonrpc"]["id"] for d in written)
    assert ids == sorted(n * 1000 + i for n in range(threads) for i in range(per_thread))


def _fields(record: CallRecord) -> dict[str, Any]:
    import attrs

    return attrs.asdict(record, recurse=False)


def test_redact_hides_more_and_opts_in_to_more() -> None:
    buffer = io.StringIO()

    def redact(data: dict[str, Any], record: CallRecord) -> dict[str, Any] | None:
        if record.method == "ping":
            return None  # skip pings altogether
        data.pop("client")
        data["sessionId"] = record.session_id  # opt in: the session id is off by default
        return data

    server = Server(
        FakeClock(), [result({}), result({"tools": []}, **{"mcp-session-id": "sess-1"})]
    )
    sink = JsonLinesSink(buffer, redact=redact)
    with httpx.Client(transport=transport(server, [sink])) as client:
        call(client, "ping", 1)
        call(client, "tools/list", 2)
    sink.flush()
    (line,) = lines(buffer.getvalue())
    assert line["method"] == "tools/list"
    assert "client" not in line
    assert line["sessionId"] == "sess-1"


def test_a_failing_redactor_writes_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="mcp_safe_retry")
    buffer = io.StringIO()

    def redact(data: dict[str, Any], record: CallRecord) -> dict[str, Any]:
        raise ValueError("oops")

    server = Server(FakeClock(), [result({})])
    sink = JsonLinesSink(buffer, redact=redact)
    with httpx.Client(transport=transport(server, [sink])) as c:
        assert call(c, "ping").status_code == 200
    sink.flush()
    assert buffer.getvalue() == ""
    assert any("failed in on_call" in r.getMessage() for r in caplog.records)


def test_network_error_details_are_scrubbed() -> None:
    buffer = io.StringIO()
    error = httpx.ConnectError("proxy https://bob:hunter2@proxy.test/?token=abc123 refused")
    server = Server(FakeClock(), [raise_error(error), result({})])
    sink = JsonLinesSink(buffer)
    with httpx.Client(transport=transport(server, [sink])) as client:
        call(client, "ping")
    sink.flush()
    text = buffer.getvalue()
    assert "hunter2" not in text
    assert "abc123" not in text
    (line,) = lines(text)
    assert line["attempts"][0]["detail"] == (
        "ConnectError: proxy https://[REDACTED]@proxy.test/?[REDACTED] refused"
    )


def test_sink_repr_names_its_file(tmp_path: Path) -> None:
    with JsonLinesSink(tmp_path / "a.jsonl") as sink:
        assert "a.jsonl" in repr(sink)
    assert repr(JsonLinesSink(io.StringIO())) == "JsonLinesSink()"


class _SlowFile(io.StringIO):
    """A file whose writes wait until they are let through, noting the thread they ran on."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.threads: set[int] = set()

    def write(self, text: str) -> int:
        self.threads.add(threading.get_ident())
        self.gate.wait(timeout=10)
        return super().write(text)


def test_lines_are_written_off_the_callers_thread() -> None:
    slow = _SlowFile()
    sink = JsonLinesSink(slow)
    server = Server(FakeClock(), [result({})])
    with httpx.Client(transport=transport(server, [sink])) as client:
        assert call(client, "ping").status_code == 200  # returns while the write waits
    assert slow.getvalue() == ""
    slow.gate.set()
    sink.close()
    assert lines(slow.getvalue())[0]["method"] == "ping"
    assert threading.get_ident() not in slow.threads


def test_a_full_queue_drops_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mcp_safe_retry")
    slow = _SlowFile()
    sink = JsonLinesSink(slow, max_queued=2)
    record = CallRecord(
        method="ping", tool=None, request_id=1, idempotency=mcp_safe_retry.Idempotency.READ
    )
    for n in range(10):
        sink.on_call(record.__class__(**{**_fields(record), "request_id": n}))
    # one line held by the blocked writer, two queued: the rest dropped
    assert 7 <= sink.dropped <= 8
    assert any("dropped" in r.getMessage() for r in caplog.records)
    slow.gate.set()
    sink.close()
    assert len(lines(slow.getvalue())) == 10 - sink.dropped


def test_close_writes_what_is_queued(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    sink = JsonLinesSink(path)
    record = CallRecord(
        method="ping", tool=None, request_id=1, idempotency=mcp_safe_retry.Idempotency.READ
    )
    for n in range(500):
        sink.on_call(record.__class__(**{**_fields(record), "request_id": n}))
    sink.close()
    assert [d["jsonrpc"]["id"] for d in lines(path.read_text())] == list(range(500))
    assert sink.dropped == 0


def test_max_queued_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_queued"):
        JsonLinesSink(io.StringIO(), max_queued=0)
