"""A pytest plugin that runs an MCP SDK's own tests through mcp-safe-retry.

Loaded with ``-p sdk_wrap`` (this directory on PYTHONPATH) into the SDK's test run by
``scripts/sdk_suites.sh``. For the flavour of the installed SDK (mcp 2.x: httpx2; mcp 1.x:
httpx) it

- wraps the transport of every ``AsyncClient`` the tests and the SDK build in
  ``AsyncRetryTransport(inner, contain_failures=True)``, what ``mcp_client(transport=inner)``
  builds. A client built without a transport gets the default transport it would have
  built, with the same pool options, as the inner one; a client whose transport is ours
  already (one ``mcp_client`` built) is counted, not wrapped twice;
- replaces the SDK's ``create_mcp_http_client`` with ``mcp_client`` everywhere it is
  reachable: module attributes, and the functions that take it as a default argument
  (``sse_client(httpx_client_factory=create_mcp_http_client)``), also in modules imported
  later;
- empties the process's call ledger before each test, as a process of its own would start:
  the SDK's tests start a new server for each test, often at the same URL (an in-process
  app), and one test's cancelled call is not another test's call;
- counts the clients it wrapped and the requests that went through the retry transport,
  writes them to ``MCP_SAFE_RETRY_SDK_COUNTS/<pid>.json`` (one file a process, xdist
  workers included) and prints the totals at the end, so an inert plugin cannot pass for
  a clean run.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from types import FunctionType, ModuleType
from typing import Any

import pytest

if int(version("mcp").split(".")[0]) >= 2:
    import httpx2 as httpx

    from mcp_safe_retry.httpx2 import AsyncRetryTransport, mcp_client
else:
    import httpx  # type: ignore[no-redef]

    from mcp_safe_retry import AsyncRetryTransport, mcp_client  # type: ignore[assignment]

from mcp.shared import _httpx_utils

ORIGINAL_FACTORY = _httpx_utils.create_mcp_http_client


class Counts:
    clients = 0  # AsyncClients whose requests go through an AsyncRetryTransport
    requests = 0  # requests that AsyncRetryTransport.handle_async_request was given
    factory_calls = 0  # clients the SDK asked its factory for, built by mcp_client


def _wrap(transport: Any) -> Any:
    if transport is None or isinstance(transport, AsyncRetryTransport):
        return transport
    return AsyncRetryTransport(transport, contain_failures=True)


def _patch_client() -> None:
    original_init = httpx.AsyncClient.__init__

    @functools.wraps(original_init)
    def __init__(self: httpx.AsyncClient, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        # After the client built its transport (the one passed, or its default with the
        # client's own pool options) and its proxy mounts: wrap each.
        self._transport = _wrap(self._transport)
        self._mounts = {pattern: _wrap(inner) for pattern, inner in self._mounts.items()}
        Counts.clients += 1

    httpx.AsyncClient.__init__ = __init__  # type: ignore[method-assign]

    original_handle = AsyncRetryTransport.handle_async_request

    @functools.wraps(original_handle)
    async def handle_async_request(self: Any, request: httpx.Request) -> httpx.Response:
        Counts.requests += 1
        return await original_handle(self, request)

    AsyncRetryTransport.handle_async_request = handle_async_request  # type: ignore[method-assign]


def factory(
    headers: dict[str, str] | None = None,
    timeout: httpx.Timeout | None = None,
    auth: httpx.Auth | None = None,
) -> httpx.AsyncClient:
    """``create_mcp_http_client``'s signature, answered by ``mcp_client``."""
    Counts.factory_calls += 1
    return mcp_client(headers=headers, timeout=timeout, auth=auth)


def _replace_defaults(function: Callable[..., Any]) -> None:
    if not isinstance(function, FunctionType):
        return
    if function.__defaults__ and ORIGINAL_FACTORY in function.__defaults__:
        function.__defaults__ = tuple(
            factory if value is ORIGINAL_FACTORY else value for value in function.__defaults__
        )
    if function.__kwdefaults__ and ORIGINAL_FACTORY in function.__kwdefaults__.values():
        function.__kwdefaults__ = {
            key: factory if value is ORIGINAL_FACTORY else value
            for key, value in function.__kwdefaults__.items()
        }


def _replace_in(module: ModuleType) -> None:
    for name, value in list(vars(module).items()):
        if value is ORIGINAL_FACTORY:
            setattr(module, name, factory)
        elif isinstance(value, FunctionType):
            _replace_defaults(getattr(value, "__wrapped__", value))
            _replace_defaults(value)
        elif isinstance(value, type) and value.__module__ == module.__name__:
            for member in vars(value).values():
                target = (
                    member.__func__ if isinstance(member, classmethod | staticmethod) else member
                )
                _replace_defaults(target)


_seen: set[str] = set()


def _replace_everywhere() -> None:
    """Replace the factory in every module loaded since the last call."""
    for name, module in list(sys.modules.items()):
        if name not in _seen and isinstance(module, ModuleType):
            _seen.add(name)
            _replace_in(module)


def pytest_configure(config: pytest.Config) -> None:
    import mcp.client.session_group
    import mcp.client.sse
    import mcp.client.streamable_http  # noqa: F401  (the modules that take the factory)

    _patch_client()
    _replace_everywhere()


def pytest_collection_finish(session: pytest.Session) -> None:
    _replace_everywhere()  # the test modules, imported by collection


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _replace_everywhere()  # modules a test or a fixture imports late
    try:
        from mcp_safe_retry.shared.ledgers import process_ledger
    except ImportError:  # a build of the project before the call ledger
        return
    process_ledger().clear()


def pytest_sessionfinish(session: pytest.Session) -> None:
    directory = os.environ.get("MCP_SAFE_RETRY_SDK_COUNTS")
    if directory:
        counts = {
            "clients": Counts.clients,
            "requests": Counts.requests,
            "factory_calls": Counts.factory_calls,
        }
        Path(directory, f"{os.getpid()}.json").write_text(json.dumps(counts), encoding="utf-8")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    totals = {"clients": 0, "requests": 0, "factory_calls": 0}
    directory = os.environ.get("MCP_SAFE_RETRY_SDK_COUNTS")
    files = sorted(Path(directory).glob("*.json")) if directory else []
    for file in files:  # this process's and, under xdist, every worker's
        for key, value in json.loads(file.read_text(encoding="utf-8")).items():
            totals[key] += value
    if not files:
        totals = {
            "clients": Counts.clients,
            "requests": Counts.requests,
            "factory_calls": Counts.factory_calls,
        }
    terminalreporter.write_line(
        f"sdk_wrap: {totals['clients']} AsyncClients wrapped, {totals['requests']} requests "
        f"through AsyncRetryTransport, {totals['factory_calls']} built by mcp_client "
        "in place of create_mcp_http_client"
    )
