"""Observable behaviour of the transports and pure functions on a fixed corpus.

``python -m benchmarks._scenarios OUT.json [--httpx2]`` writes what the importable
``mcp_safe_retry`` does on scripted exchanges (sync and async, JSON and SSE, retries, encodings,
errors; through the httpx2 shells with ``--httpx2``) and on a seeded random corpus for the
classifier, the SSE decoder and the stream tracker. The equivalence check runs it against
two source trees and compares the files.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import random
import re
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import mcp_safe_retry

if "--httpx2" in sys.argv:  # the same scenarios through the httpx2 shells
    import httpx2 as httpx

    from mcp_safe_retry.httpx2 import AsyncRetryTransport, RetryTransport
else:
    import httpx

    from mcp_safe_retry import AsyncRetryTransport, RetryTransport
from mcp_safe_retry.core.jsonrpc import parse_request
from mcp_safe_retry.core.sse import SSEDecoder
from mcp_safe_retry.core.stream import StreamTracker

URL = "http://mcp.test/mcp"
_WIRE = re.compile(r"mcp-(?:safe-)?retry-[0-9a-f]{8}-")
_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?")
_STARTED = re.compile(r'"startedAt":[0-9.e+]+')
_TIMES = {"startedAt", "durationMs", "elapsedMs", "delay"}


def _norm(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items() if k not in _TIMES}
    if isinstance(value, list | tuple):
        return [_norm(v) for v in value]
    if isinstance(value, bytes):  # wall-clock times in a contained answer's text vary
        text = _WIRE.sub("mcp-safe-retry-X-", value.decode("utf-8", "backslashreplace"))
        return _STARTED.sub('"startedAt":0', _STAMP.sub("TIME", text))
    if isinstance(value, str):
        return _STAMP.sub("TIME", _WIRE.sub("mcp-safe-retry-X-", value))
    return value


class _Chunks(httpx.SyncByteStream, httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes | Exception]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._chunks:
            if isinstance(chunk, Exception):
                raise chunk
            yield chunk

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._iter_sync():
            yield chunk

    def _iter_sync(self) -> Iterator[bytes]:
        return iter(self)


class Scripted(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """Answers the n-th request with the n-th scripted answer (status, headers, chunks)."""

    def __init__(self, script: list[Any]) -> None:
        self.script = list(script)
        self.seen: list[dict[str, Any]] = []

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(
            {"headers": [list(h) for h in request.headers.raw], "body": request.read()}
        )
        if not self.script:
            raise httpx.ConnectError("nothing more scripted")
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        if step[0] == "pre":  # a response built with content=..., already read (MockTransport)
            return httpx.Response(step[1], headers=step[2], content=step[3])
        status, headers, chunks = step
        return httpx.Response(status, headers=headers, stream=_Chunks(chunks))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._answer(request)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return self._answer(request)


def _req(method: str, rid: Any = 1, **params: Any) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if rid is not None:
        msg["id"] = rid
    if params:
        msg["params"] = params
    return json.dumps(msg).encode()


def _ok(rid: Any = 1, **extra: Any) -> bytes:
    result = {"content": [{"type": "text", "text": "ok é"}], "isError": False, **extra}
    return json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()


JSON_H = [("content-type", "application/json")]
SSE_H = [("content-type", "text/event-stream")]
TOOL = {"name": "lookup", "arguments": {"q": "x", "n": 1.5}}


def _scripts() -> list[tuple[str, bytes, list[Any], dict[str, Any]]]:
    ok = _ok()
    sse = b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n'
    sse_final = b"data: " + ok + b"\n\n"
    gz = gzip.compress(ok)
    read_policy = {"tools": {"lookup": "read"}, "initial_backoff": 0.0}
    retry_ok = b'{"jsonrpc":"2.0","id":"WIRE","result":{"content":[],"isError":false}}'
    return [
        ("json ok", _req("tools/call", **TOOL), [(200, JSON_H, [ok])], {}),
        (
            "json ok content-length",
            _req("tools/call", **TOOL),
            [(200, [*JSON_H, ("content-length", str(len(ok))), ("x-a", "1")], [ok])],
            {},
        ),
        (
            "json ok chunked",
            _req("tools/call", **TOOL),
            [(200, [*JSON_H, ("transfer-encoding", "chunked")], [ok[:5], ok[5:]])],
            {},
        ),
        (
            "json gzip",
            _req("tools/call", **TOOL),
            [
                (
                    200,
                    [*JSON_H, ("content-encoding", "gzip"), ("content-length", str(len(gz)))],
                    [gz],
                )
            ],
            {},
        ),
        ("json pre-read", _req("tools/call", **TOOL), [("pre", 200, JSON_H, ok)], {}),
        (
            "json pre-read too large",
            _req("ping"),
            [("pre", 200, JSON_H, ok)],
            {"max_event_bytes": len(ok) - 1},
        ),
        ("json empty body", _req("tools/call", **TOOL), [(200, JSON_H, [b""])], {}),
        ("json malformed", _req("tools/call", **TOOL), [(200, JSON_H, [b"{nope"])], {}),
        ("json tool error", _req("tools/call", **TOOL), [(200, JSON_H, [_ok(isError=True)])], {}),
        ("json id mismatch", _req("tools/call", **TOOL), [(200, JSON_H, [_ok(7)])], {}),
        (
            "json latin1",
            _req("tools/call", **TOOL),
            [
                (
                    200,
                    [("content-type", "application/json; charset=latin-1")],
                    [ok.decode().encode("latin-1")],
                )
            ],
            {},
        ),
        (
            "json nan",
            _req("ping"),
            [
                (
                    200,
                    JSON_H,
                    [
                        b'{"jsonrpc":"2.0","id":1,"result":{"x":NaN,"b":1e400,"i":123456789012345678901234567890}}'
                    ],
                )
            ],
            {},
        ),
        (
            "json dup keys",
            _req("ping"),
            [(200, JSON_H, [b'{"jsonrpc":"2.0","id":2,"id":1,"result":{}}'])],
            {},
        ),
        ("json bom", _req("ping"), [(200, JSON_H, [b"\xef\xbb\xbf" + ok])], {}),
        (
            "huge int id",
            _req("ping", 18446744073709551616),
            [(200, JSON_H, [b'{"jsonrpc":"2.0","id":18446744073709551616,"result":{}}'])],
            {},
        ),
        (
            "huge ints retried",
            _req("tools/call", name="lookup", arguments={"n": -9223372036854775809}),
            [
                (500, [], [b""]),
                (200, JSON_H, [retry_ok.replace(b"[]", b'[],"n":-9223372036854775809,"f":1e400')]),
            ],
            {"policy": read_policy},
        ),
        (
            "huge ints sse broken then json",
            _req("tools/call", name="lookup", arguments={"n": 1}),
            [
                (200, SSE_H, [sse, httpx.ReadError("cut")]),
                (200, JSON_H, [retry_ok.replace(b"[]", b'[],"n":-123456789012345678901')]),
            ],
            {"policy": read_policy},
        ),
        (
            "huge id and code",
            _req("ping", 1),
            [
                (
                    200,
                    JSON_H,
                    [
                        b'{"jsonrpc":"2.0","id":1,"error":{"code":-32000000000000000000,"message":"m"}}'
                    ],
                )
            ],
            {},
        ),
        (
            "huge ints sse retried",
            _req("tools/call", name="lookup", arguments={"n": 1.5e300}),
            [
                (200, SSE_H, [sse, httpx.ReadError("cut")]),
                (
                    200,
                    SSE_H,
                    [
                        b"data: "
                        + retry_ok.replace(b"[]", b'[],"n":123456789012345678901')
                        + b"\n\n"
                    ],
                ),
            ],
            {"policy": read_policy},
        ),
        ("json utf16", _req("ping"), [(200, JSON_H, [ok.decode().encode("utf-16")])], {}),
        ("json text/plain", _req("ping"), [(200, [("content-type", "text/plain")], [ok])], {}),
        ("202 to request", _req("ping"), [(202, [], [b""])], {}),
        ("notification", _req("notifications/initialized", None), [(202, [], [b""])], {}),
        ("batch passes", b"[" + _req("ping") + b"]", [(200, JSON_H, [b"[]"])], {}),
        ("get passes", b"", [(200, SSE_H, [sse])], {"method": "GET"}),
        (
            "session id",
            _req(
                "initialize", protocolVersion="2025-06-18", clientInfo={"name": "c", "version": "1"}
            ),
            [
                (
                    200,
                    [*JSON_H, ("mcp-session-id", "s-1")],
                    [b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}'],
                )
            ],
            {},
        ),
        (
            "500 read retried",
            _req("tools/call", **TOOL),
            [
                (
                    500,
                    JSON_H,
                    [b'{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"boom"}}'],
                ),
                (200, JSON_H, [retry_ok]),
            ],
            {"policy": read_policy},
        ),
        (
            "429 retry-after",
            _req("tools/call", **TOOL),
            [(429, [("retry-after", "0")], [b""]), (200, JSON_H, [retry_ok])],
            {"policy": read_policy},
        ),
        (
            "503 retry-after too long",
            _req("tools/call", **TOOL),
            [(503, [("retry-after", "9999")], [b""])],
            {"policy": read_policy},
        ),
        ("500 unsafe", _req("tools/call", **TOOL), [(500, [], [b"x"])], {}),
        (
            "network error read",
            _req("tools/call", **TOOL),
            [httpx.ConnectError("refused"), (200, JSON_H, [retry_ok])],
            {"policy": read_policy},
        ),
        (
            "network error exhausted",
            _req("ping"),
            [httpx.ReadTimeout("slow"), httpx.ReadTimeout("slow"), httpx.ReadTimeout("slow")],
            {"policy": read_policy},
        ),
        (
            "body too large",
            _req("ping"),
            [(200, JSON_H, [ok, ok])],
            {"max_event_bytes": len(ok) + 3},
        ),
        (
            "read error mid body",
            _req("ping"),
            [(200, JSON_H, [ok[:4], httpx.ReadError("cut")]), (200, JSON_H, [retry_ok])],
            {"policy": read_policy},
        ),
        ("sse ok", _req("tools/call", **TOOL), [(200, SSE_H, [sse, sse_final])], {}),
        (
            "sse crlf split",
            _req("tools/call", **TOOL),
            [(200, SSE_H, list(_split((sse + sse_final).replace(b"\n", b"\r\n"), 7)))],
            {},
        ),
        (
            "sse cr only",
            _req("tools/call", **TOOL),
            [(200, SSE_H, [(sse + sse_final).replace(b"\n", b"\r")])],
            {},
        ),
        (
            "sse comment id retry",
            _req("tools/call", **TOOL),
            [(200, SSE_H, [b": hi\nid: 4\nretry: 10\n\n", b"event: message\nid: 5\n" + sse_final])],
            {},
        ),
        (
            "sse broken then json",
            _req("tools/call", **TOOL),
            [
                (200, SSE_H, [sse, b'data: {"jsonrpc"', httpx.ReadError("cut")]),
                (200, JSON_H, [retry_ok]),
            ],
            {"policy": read_policy},
        ),
        (
            "sse broken then sse",
            _req("tools/call", **TOOL),
            [
                (200, SSE_H, [sse, httpx.RemoteProtocolError("cut")]),
                (200, SSE_H, [b"data: " + retry_ok + b"\n\n"]),
            ],
            {"policy": read_policy},
        ),
        ("sse ends without answer", _req("tools/call", **TOOL), [(200, SSE_H, [sse])], {}),
        (
            "sse oversized",
            _req("tools/call", **TOOL),
            [(200, SSE_H, [b"data: " + b"x" * 300 + b"\n\n", sse_final])],
            {"max_event_bytes": 100},
        ),
        (
            "sse other id then ours",
            _req("tools/call", **TOOL),
            [(200, SSE_H, [b"data: " + _ok(9) + b"\n\n" + sse_final])],
            {},
        ),
        ("sse bad json", _req("tools/call", **TOOL), [(200, SSE_H, [b"data: {x\n\n"])], {}),
    ]


def _split(data: bytes, n: int) -> Iterator[bytes]:
    for i in range(0, len(data), n):
        yield data[i : i + n]


def _fix_wire(script: list[Any], transport: Scripted) -> None:
    """Scripted answers that say WIRE take the wire id of the request they answer."""
    original = transport._answer

    def answer(request: httpx.Request) -> httpx.Response:
        body = request.read()
        try:
            wire = json.loads(body).get("id")
        except (ValueError, AttributeError):
            wire = None
        step = transport.script[0] if transport.script else None
        if isinstance(step, tuple) and step[0] != "pre" and wire is not None:
            transport.script[0] = (
                step[0],
                step[1],
                [
                    c.replace(b"WIRE", str(wire).encode()) if isinstance(c, bytes) else c
                    for c in step[2]
                ],
            )
        return original(request)

    transport._answer = answer  # type: ignore[method-assign]


def _observe(
    response: httpx.Response | None, error: BaseException | None, t: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if error is not None:
        out["error"] = f"{type(error).__name__}: {error}"
    if response is not None:
        out["status"] = response.status_code
        out["headers"] = [list(h) for h in response.headers.raw]
        if b'"startedAt"' in response.content:  # its length varies with the time in it
            out["headers"] = [
                [k, b"N" if k.lower() == b"content-length" else v] for k, v in out["headers"]
            ]
        out["content"] = response.content
        out["num_bytes_downloaded"] = response.num_bytes_downloaded
        record = mcp_safe_retry.get_record(response)
        out["record"] = record.to_dict() if record else None
    out["history"] = [r.to_dict() for r in t.history.records()]
    return out


def _fresh_process() -> None:
    """Each scenario runs as in a process of its own: the process's call ledger emptied (a
    revision without one kept a guard per transport, which is the same thing)."""
    try:
        from mcp_safe_retry.shared.ledgers import process_ledger
    except ImportError:
        return
    process_ledger().clear()


def scripted() -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name, body, script, opts in _scripts():
        for mode in ("sync", "async"):
            _fresh_process()
            inner = Scripted(script)
            _fix_wire(script, inner)
            kwargs: dict[str, Any] = {}
            if "policy" in opts:
                kwargs["policy"] = mcp_safe_retry.RetryPolicy(**opts["policy"])
            if "max_event_bytes" in opts:
                kwargs["max_event_bytes"] = opts["max_event_bytes"]
            method = opts.get("method", "POST")
            headers = {"content-type": "application/json"}
            response: httpx.Response | None = None
            error: BaseException | None = None
            if mode == "sync":
                t: Any = RetryTransport(inner, sleep=lambda _: None, **kwargs)
                with httpx.Client(transport=t) as client:
                    try:
                        response = client.request(method, URL, content=body, headers=headers)
                    except httpx.HTTPError as exc:
                        error = exc
            else:

                async def no_sleep(_: float) -> None:
                    return None

                t = AsyncRetryTransport(inner, sleep=no_sleep, **kwargs)

                response, error = asyncio.run(_send_async(t, method, body, headers))
            results[f"{mode}: {name}"] = _norm({**_observe(response, error, t), "sent": inner.seen})
    results.update(sequences())
    return results


class _Budget(mcp_safe_retry.RetryBudget):
    """A subclass: the shells must treat it as the budget it is."""


def _sequences() -> list[
    tuple[str, list[tuple[str, bytes, dict[str, str]]], list[Any], dict[str, Any]]
]:
    """Several requests through one transport: what one call leaves for the next."""
    call = _req("tools/call", **TOOL)
    init = _req(
        "initialize", protocolVersion="2025-06-18", clientInfo={"name": "c", "version": "1"}
    )
    init_ok = b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}'
    with_id = b'id: e-1\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n'
    read_policy = {"tools": {"lookup": "read"}, "initial_backoff": 0.0, "max_retries": 1}
    session = {"mcp-session-id": "s-1"}
    return [
        (
            "duplicate held",
            [("POST", call, {}), ("POST", call, {})],
            [(200, JSON_H, [_ok()[:5], httpx.ReadError("cut")]), (200, JSON_H, [_ok()])],
            {"contain": True},
        ),
        (
            "duplicate labelled",
            [("POST", call, {}), ("POST", call, {})],
            [httpx.ReadTimeout("slow"), (200, JSON_H, [_ok()])],
            {"policy": {"duplicate_guard": "label"}},
        ),
        (
            "duplicate after a refusal",
            [("POST", call, {}), ("POST", call, {})],
            [httpx.ConnectError("refused"), (200, JSON_H, [_ok()])],
            {},
        ),
        (
            "redirect hop",
            [("POST", call, {}), ("POST", call, {})],
            [(307, [("location", URL + "/2")], [b""]), (200, JSON_H, [_ok()])],
            {"contain": True},
        ),
        (
            "delete then 404",
            [("POST", init, {}), ("DELETE", b"", session), ("POST", call, session)],
            [
                (200, [*JSON_H, ("mcp-session-id", "s-1")], [init_ok]),
                (200, [], [b""]),
                (404, [], [b""]),
            ],
            {"contain": True},
        ),
        (
            "session 404 renewed",
            [("POST", init, {}), ("POST", call, session)],
            [(200, [*JSON_H, ("mcp-session-id", "s-1")], [init_ok]), (404, [], [b""])],
            {"contain": True},
        ),
        (
            "resumable stream not contained",
            [("POST", call, {})],
            [(200, SSE_H, [with_id, httpx.ReadError("cut")])],
            {"contain": True},
        ),
        (
            "stream without ids contained",
            [("POST", call, {})],
            [(200, SSE_H, [with_id.replace(b"id: e-1\n", b""), httpx.ReadError("cut")])],
            {"contain": True},
        ),
        (
            "discover and initialize not contained",
            [("POST", _req("server/discover"), {}), ("POST", init, {}), ("POST", call, {})],
            [httpx.ConnectError("a"), httpx.ConnectError("b"), httpx.ConnectError("c")],
            {"contain": True},
        ),
        (
            "final 503 contained",
            [("POST", call, {}), ("POST", _req("ping"), {})],
            [(503, [], [b"busy"]), (503, [], [b"busy"]), (503, [], [b"busy"])],
            {"contain": True, "policy": read_policy},
        ),
        (
            "breaker ratio of calls",
            [("POST", call, {})] * 4,
            [(500, [], [b""])] * 4 + [(200, JSON_H, [_ok()])] * 4,
            {
                "policy": read_policy,
                "breaker": {"failure_threshold": 100, "failure_ratio": 0.5, "min_calls": 2},
                "contain": True,
            },
        ),
        (
            "budget refund when the breaker holds a retry",
            [("POST", call, {}), ("POST", call, {})],
            [(500, [], [b""]), (200, JSON_H, [_ok()])],
            {
                "policy": read_policy,
                "breaker": {"failure_threshold": 1, "min_calls": 100},
                "budget": 2.0,
            },
        ),
        (
            "budget subclass spent",
            [("POST", call, {})] * 3,
            [(500, [], [b""])] * 6,
            {"policy": read_policy, "budget": 1.0, "subclass": True},
        ),
    ]


def sequences() -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name, requests, script, opts in _sequences():
        for mode in ("sync", "async"):
            _fresh_process()
            inner = Scripted(script)
            _fix_wire(script, inner)
            kwargs: dict[str, Any] = {"contain_failures": opts.get("contain", False)}
            if "policy" in opts:
                kwargs["policy"] = mcp_safe_retry.RetryPolicy(**opts["policy"])
            if "breaker" in opts:
                kwargs["breaker"] = mcp_safe_retry.CircuitBreaker(
                    clock=lambda: 0.0, **opts["breaker"]
                )
            if "budget" in opts:
                kind = _Budget if opts.get("subclass") else mcp_safe_retry.RetryBudget
                kwargs["budget"] = kind(burst=opts["budget"])
            observed: list[Any] = []
            if mode == "sync":
                t: Any = RetryTransport(inner, sleep=lambda _: None, **kwargs)
                with httpx.Client(transport=t) as client:
                    for method, body, headers in requests:
                        try:
                            response = client.request(
                                method, URL, content=body, headers={**JSON_CT, **headers}
                            )
                            observed.append(_observe(response, None, t))
                        except httpx.HTTPError as exc:
                            observed.append(_observe(None, exc, t))
            else:

                async def no_sleep(_: float) -> None:
                    return None

                t = AsyncRetryTransport(inner, sleep=no_sleep, **kwargs)

                async def run_all(
                    t: Any = t, requests: Any = requests, observed: Any = observed
                ) -> None:
                    for method, body, headers in requests:
                        response, error = await _send_async(t, method, body, {**JSON_CT, **headers})
                        observed.append(_observe(response, error, t))

                asyncio.run(run_all())
            end = {"budget": repr(kwargs.get("budget")), "left": len(inner.script)}
            results[f"{mode}: seq {name}"] = _norm(
                {"steps": observed, "sent": inner.seen, "end": end}
            )
    return results


JSON_CT = {"content-type": "application/json"}


async def _send_async(
    transport: Any, method: str, body: bytes, headers: dict[str, str]
) -> tuple[httpx.Response | None, BaseException | None]:
    async with httpx.AsyncClient(transport=transport) as client:
        try:
            response = await client.request(method, URL, content=body, headers=headers)
        except httpx.HTTPError as exc:
            return None, exc
        return response, None


def _mutations(rng: random.Random) -> Iterator[bytes]:
    """JSON-RPC-ish bodies, valid and broken, from a seeded generator."""
    ids: list[Any] = [1, "1", 2, None, True, 1.0, [1]]
    results: list[Any] = [
        {"content": [], "isError": False},
        {"content": [{"type": "text", "text": "t"}], "isError": True},
        {"content": "no"},
        {"content": [], "isError": "yes"},
        {"resultType": "input_required", "inputRequests": {}},
        {"resultType": "input_required"},
        {"resultType": "weird", "content": []},
        {},
        [],
        "s",
    ]
    errors: list[Any] = [
        {"code": -32601, "message": "m"},
        {"code": True, "message": "m"},
        {"code": 1},
        "e",
    ]
    for _ in range(600):
        msg: dict[str, Any] = {}
        if rng.random() < 0.9:
            msg["jsonrpc"] = rng.choice(["2.0", "2.0", "2.0", "1.0"])
        if rng.random() < 0.9:
            msg["id"] = rng.choice(ids)
        r = rng.random()
        if r < 0.6:
            msg["result"] = rng.choice(results)
        elif r < 0.9:
            msg["error"] = rng.choice(errors)
        else:
            msg["result"], msg["error"] = {}, errors[0]
        if rng.random() < 0.1:
            msg["method"] = "notifications/progress"
        text = json.dumps(msg).encode()
        cut = rng.random()
        if cut < 0.05:
            text = text[: rng.randrange(len(text))]
        elif cut < 0.08:
            text = text.replace(b"1", b"NaN", 1)
        elif cut < 0.1:
            text = b"  " + text + b"\n"
        elif cut < 0.14:
            text = text.replace(
                b"1",
                rng.choice(
                    [
                        b"18446744073709551616",
                        b"-9223372036854775809",
                        b"9223372036854775807",
                        b"1e400",
                    ]
                ),
                1,
            )
        yield text


def _sse_corpus(rng: random.Random) -> Iterator[bytes]:
    bodies = list(_mutations(random.Random(1)))
    eols = [b"\n", b"\r\n", b"\r"]
    for _ in range(300):
        eol = rng.choice(eols)
        parts: list[bytes] = []
        for _ in range(rng.randrange(1, 6)):
            kind = rng.random()
            if kind < 0.1:
                parts.append(b": keep-alive" + eol + eol)
            elif kind < 0.2:
                parts.append(
                    b"id: " + str(rng.randrange(9)).encode() + eol + b"retry: 5" + eol + eol
                )
            else:
                body = rng.choice(bodies)
                lines = [b"data:" + (b" " if rng.random() < 0.8 else b"") + body]
                if rng.random() < 0.3:
                    lines.insert(0, b"event: " + rng.choice([b"message", b"other"]))
                if rng.random() < 0.2:
                    lines.append(b"data: ")
                if rng.random() < 0.2:
                    lines.append(b"weird")
                parts.append(eol.join(lines) + eol + eol)
        if rng.random() < 0.2:
            parts.append(b"data: unterminated")
        yield b"".join(parts)


def _mixed_sse_corpus(rng: random.Random) -> Iterator[bytes]:
    """Streams whose lines end in CRLF, LF or CR, mixed line by line."""
    bodies = list(_mutations(random.Random(2)))
    lines = [b"", b"", b"event: message", b"event: other", b"id: 4", b"retry: 9", b": ping", b"x"]
    for _ in range(300):
        parts: list[bytes] = []
        for _ in range(rng.randrange(1, 12)):
            line = b"data: " + rng.choice(bodies) if rng.random() < 0.4 else rng.choice(lines)
            parts.append(line + rng.choice([b"\n", b"\r\n", b"\r"]))
        yield b"".join(parts)


def _decoded(stream: bytes, size: int, limit: int) -> list[Any]:
    """Everything an SSEDecoder reports for ``stream`` fed in ``size``-byte chunks."""
    decoder = SSEDecoder(max_event_bytes=limit)
    events = []
    for i in range(0, len(stream), size):
        events.extend(repr(e) for e in decoder.feed(stream[i : i + size]))
    before_end = decoder.pending()
    events.extend(repr(e) for e in decoder.finish())
    return [events, before_end, decoder.pending(), decoder.last_event_id, decoder.retry_ms]


def pure() -> dict[str, Any]:
    rng = random.Random(20260505)
    out: dict[str, Any] = {"classify": [], "parse_request": [], "sse": [], "tracker": []}
    out["sse_mixed"] = [
        _norm(_decoded(stream, size, 300 if size == 5 else 1 << 20))
        for stream in _mixed_sse_corpus(random.Random(20261201))
        for size in (1, 2, 5, 64, 4096)
    ]
    for body in _mutations(random.Random(1)):
        for expected in (1, "1", None):
            for method in ("tools/call", "ping", "prompts/get"):
                for ct in (
                    "application/json",
                    "text/event-stream",
                    "application/json; charset=utf-16",
                ):
                    c = mcp_safe_retry.classify(
                        200, body, content_type=ct, expected_id=expected, method=method
                    )
                    out["classify"].append(_norm(repr(c)))
        out["classify"].append(_norm(repr(mcp_safe_retry.classify(503, body))))
        facts = parse_request(body.replace(b'"result"', b'"method":"tools/call","params"', 1))
        out["parse_request"].append(_norm(repr(facts) + (facts.digest if facts else "")))
    for stream in _sse_corpus(rng):
        for size in (1, 3, 17, 4096):
            decoder = SSEDecoder(max_event_bytes=200 if size == 17 else 1 << 20)
            events = []
            for i in range(0, len(stream), size):
                events.extend(repr(e) for e in decoder.feed(stream[i : i + size]))
            out["sse"].append(
                _norm(
                    [
                        events,
                        decoder.pending(),
                        decoder.last_event_id,
                        decoder.retry_ms,
                        decoder.oversized,
                    ]
                )
            )
            tracker = StreamTracker(
                wire_id="w-1" if size == 3 else 1,
                caller_id=1,
                method="tools/call",
                max_event_bytes=1 << 20,
            )
            passed = b"".join(
                tracker.feed(stream[i : i + size]) for i in range(0, len(stream), size)
            )
            out["tracker"].append(
                _norm(
                    [
                        passed,
                        repr(tracker.classification),
                        repr(tracker.message),
                        tracker.events,
                        tracker.held_back(),
                    ]
                )
            )
    return out


def main(argv: list[str]) -> int:
    data = {"scripted": scripted(), "pure": {} if "--httpx2" in argv else pure()}
    with open(argv[0], "w") as f:
        json.dump(data, f, indent=1, sort_keys=True, default=repr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
