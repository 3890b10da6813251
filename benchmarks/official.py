"""The official ``mcp`` 2.x client over loopback, with and without the transport.

``python -m benchmarks.official [--quick]``: MCPServer runs under uvicorn in another process
(``_mcp_server.py``, 127.0.0.1, port 0) so client and server never share an interpreter.
Each contender is a ``mcp.client.Client`` over ``streamable_http_client`` with its own
``httpx2.AsyncClient``: bare (the SDK's timeouts, a plain ``AsyncHTTPTransport``), or
``mcp_safe_retry.httpx2.mcp_client()`` around the same transport (and the baseline's, if one
was loaded), or the hand-on floor sketch around it (``floor.SessionHandOnTransport``: what
any classifying wrapper must do, so the floors can be read against it in the same run).
Per ``call_tool``: the wall time and the client process's CPU time (``time.process_time()``
around each call, summed over a round and divided by its calls; the server's CPU is in its
own process and not counted), in strict alternation call by call (the order reversed every
other call), medians of the per-round ratios to bare and their spread.

Both protocol eras are measured against the same server: ``2026-07-28`` (the client's
``auto`` mode: ``server/discover``, JSON answers) and ``2025-11-25`` (``mode="legacy"``:
the initialize handshake and a session, answers as SSE streams whose lines end in CRLF).
The SDK's limit on one SSE event is raised to 8 MiB for every contender, since the 1 MB
result is a 2 MB event.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_safe_retry.httpx2 import mcp_client

from ._timing import Alternating, alternate, clock, cpu_clock
from .floor import SessionHandOnTransport
from .percall import BASELINE, baseline_module, server_process, summarise

__all__ = ["BARE", "ERAS", "SIZES", "http_clients", "official_server", "run"]

T = TypeVar("T")

BARE = "mcp client"
OURS = "mcp-safe-retry"
SKETCH = "hand-on sketch"  # floor.py's least classifying wrapper, under the whole session
ERAS = {"2026-07-28": "auto", "2025-11-25": "legacy"}  # era -> the Client's mode
SIZES = {"1k": 1024, "64k": 65536, "1m": 1 << 20}
SDK_TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # what the SDK's own default client uses
# A 1 MB text comes as text and as structuredContent: a 2 MB event, past the SDK's 1 MiB
# default for one SSE event.
MAX_EVENT = 8 << 20


def http_clients() -> dict[str, Callable[[], httpx2.AsyncClient]]:
    """Contender -> a new ``httpx2.AsyncClient`` for its ``Client`` (also what
    ``machine_counts`` builds each official child with)."""
    clients: dict[str, Callable[[], httpx2.AsyncClient]] = {
        BARE: lambda: httpx2.AsyncClient(
            transport=httpx2.AsyncHTTPTransport(), timeout=SDK_TIMEOUT, follow_redirects=True
        ),
        OURS: lambda: mcp_client(transport=httpx2.AsyncHTTPTransport()),
        SKETCH: lambda: httpx2.AsyncClient(
            transport=SessionHandOnTransport(httpx2.AsyncHTTPTransport()),
            timeout=SDK_TIMEOUT,
            follow_redirects=True,
        ),
    }
    if BASELINE:
        module = baseline_module("httpx2")
        clients[BASELINE["label"]] = lambda: module.mcp_client(
            transport=httpx2.AsyncHTTPTransport()
        )
    return clients


class Sessions:
    """One open ``Client`` per contender, on an event loop in a thread of its own.

    The sessions stay open across rounds (anyio's task groups must be left by the task
    that entered them), and each round times its calls inside the loop.
    """

    def __init__(self, url: str, mode: str) -> None:
        self._url = url
        self._mode = mode
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._clients: dict[str, Client] = {}
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> Sessions:
        self._thread.start()
        if not self._ready.wait(60) or self._error is not None:
            raise RuntimeError(f"sessions did not open: {self._error!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        stop = self._stop
        if stop is not None:
            self._loop.call_soon_threadsafe(stop.set)
        self._thread.join(30)

    @property
    def names(self) -> list[str]:
        return list(self._clients)

    def client(self, name: str) -> Client:
        return self._clients[name]

    def protocol_version(self, name: str) -> str:
        return str(self._clients[name].protocol_version)

    def _serve(self) -> None:
        try:
            self._loop.run_until_complete(self._main())
        except BaseException as exc:  # reported by __enter__
            self._error = exc
            self._ready.set()
        finally:
            self._loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        makers = http_clients()
        opened: dict[str, Client] = {}
        tasks = [
            asyncio.create_task(self._hold(name, make, opened)) for name, make in makers.items()
        ]
        for _ in range(6000):  # at most 60 s, as __enter__ waits
            if len(opened) == len(makers) or any(task.done() for task in tasks):
                break
            await asyncio.sleep(0.01)
        if len(opened) < len(makers):  # one failed (its error is raised) or hangs
            self._stop.set()
            for task in tasks:
                if not task.done():
                    task.cancel()
            await asyncio.gather(*tasks)
            raise RuntimeError("a client did not open")
        self._clients = {name: opened[name] for name in makers}  # bare first
        self._ready.set()
        await asyncio.gather(*tasks)

    async def _hold(
        self, name: str, make: Callable[[], httpx2.AsyncClient], opened: dict[str, Client]
    ) -> None:
        """Open one contender's client and keep it open until the end, in a task of its own.

        Each client's anyio task group and cancel scopes are then the roots of their own
        tree: opened one inside the other (one exit stack), the later client's scope chains
        were two scopes deeper, and anyio walked them on every read and write (about 500
        more instructions per call for whichever contender was opened second).
        """
        assert self._stop is not None
        async with make() as http:
            transport = streamable_http_client(
                self._url, http_client=http, max_sse_event_size=MAX_EVENT
            )
            async with Client(transport, mode=self._mode) as client:
                opened[name] = client
                await self._stop.wait()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the sessions' loop; wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def alternating(self, size: int) -> Alternating:
        """n calls of ``text(size)`` by every contender, alternated call by call (the order
        reversed every other time): name -> (wall seconds, client-process CPU seconds).

        The calling thread only waits on the loop's thread meanwhile, so the process's CPU
        time is the client's work: the SDK, httpx2, the transport and the event loop.
        """
        calls = [(name, client.call_tool) for name, client in self._clients.items()]

        async def alternate(n: int) -> dict[str, tuple[float, float]]:
            arguments = {"size": size}
            wall = dict.fromkeys(self._clients, 0.0)
            cpu = dict.fromkeys(self._clients, 0.0)
            for i in range(n):
                for name, call in calls if i % 2 == 0 else calls[::-1]:
                    start, used = clock(), cpu_clock()
                    await call("text", arguments)
                    cpu[name] += cpu_clock() - used
                    wall[name] += clock() - start
            return {name: (wall[name], cpu[name]) for name in wall}

        return lambda n: self.run(alternate(n))

    def check(self, size: int) -> None:
        """Every contender gets the whole text back, as text and as structured content."""

        async def one(client: Client) -> float:
            result = await client.call_tool("text", {"size": size})
            text = result.content[0].text  # type: ignore[union-attr]
            structured = result.structured_content or {}
            if result.is_error or len(text) != size or len(structured.get("result", "")) != size:
                raise RuntimeError(f"unexpected answer to text({size})")
            return 0.0

        for client in self._clients.values():
            self.run(one(client))


def official_server() -> contextlib.AbstractContextManager[str]:
    """Start ``_mcp_server.py`` in a subprocess on 127.0.0.1 port 0; yield its MCP URL."""
    return server_process("benchmarks._mcp_server", "/mcp")


def run(*, sizes: list[str], rounds: int, target: float) -> list[dict[str, Any]]:
    """One row per era and size: wall µs per ``call_tool`` of each contender and ratios to
    bare (``contenders``), and the same for the client's CPU time (``cpu``)."""
    rows = []
    with official_server() as url:
        for era, mode in ERAS.items():
            with Sessions(url, mode) as sessions:
                for name in sessions.names:
                    if sessions.protocol_version(name) != era:
                        raise RuntimeError(f"{name} negotiated {sessions.protocol_version(name)}")
                for size_name in sizes:
                    size = SIZES[size_name]
                    sessions.check(size)
                    wall, cpu = alternate(sessions.alternating(size), rounds=rounds, target=target)
                    rows.append(
                        {
                            "era": era,
                            "case": f"text-{size_name}",
                            "contenders": summarise(wall, bare=BARE),
                            "cpu": summarise(cpu, bare=BARE),
                        }
                    )
    return rows


def main(argv: list[str]) -> int:
    """``[--quick] [--rounds N] [--target SECONDS] [--json PATH] [SIZE ...]``: sizes among
    1k, 64k, 1m; ``--json`` also writes the rows (as ``results.json`` holds them)."""
    quick = "--quick" in argv
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 31
    sizes = [a for a in argv if a in SIZES] or (["1k"] if quick else list(SIZES))
    target = float(argv[argv.index("--target") + 1]) if "--target" in argv else 0.3
    rows = run(sizes=sizes, rounds=2 if quick else rounds, target=0.01 if quick else target)
    if "--json" in argv:
        Path(argv[argv.index("--json") + 1]).write_text(json.dumps(rows, indent=1) + "\n")
    print(
        "era        case      contender                 client CPU per call (spread)"
        "                  | wall per call"
    )
    for row in rows:
        for name, cell in row["cpu"].items():
            wall = row["contenders"][name]
            print(
                f"{row['era']} {row['case']:9s} {name:24s} {cell['us_per_call']:9.1f} µs"
                f"  x{cell['ratio']:.3f} (x{cell['ratio_min']:.2f}-x{cell['ratio_max']:.2f},"
                f" best x{cell['best_ratio']:.3f})"
                f" {cell['added_us']:+7.1f} µs | {wall['us_per_call']:9.1f} µs"
                f"  x{wall['ratio']:.3f} {wall['added_us']:+7.1f} µs"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
