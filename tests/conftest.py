"""Shared fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version

import pytest

from tests.redis_support import HOW_TO_GET_ONE, RedisServer, redis_server_binary


def _mcp_major() -> int | None:
    try:
        return int(version("mcp").split(".")[0])
    except PackageNotFoundError:
        return None


# mcp 1.x and 2.x cannot share an environment: tests/mcp1 runs in one of its own.
# tests/sdk_suites holds plugins for the SDKs' own test runs (scripts/sdk_suites.sh).
collect_ignore = ["sdk_suites"] + ([] if _mcp_major() == 1 else ["mcp1"])
# Each agent framework runs in an environment of its own, made by scripts/frameworks.sh,
# which names the framework in MCP_SAFE_RETRY_FRAMEWORK.
if not os.environ.get("MCP_SAFE_RETRY_FRAMEWORK"):
    collect_ignore.append("frameworks")
# The TypeScript SDK's client runs under node from a cache scripts/gateway_clients.sh fills.
if not os.environ.get("MCP_SAFE_RETRY_NODE_MODULES"):
    collect_ignore.append("typescript")


@pytest.fixture(autouse=True)
def _fresh_process_ledger() -> Iterator[None]:
    """Each test starts with the process's call ledger empty, as a new process does: the
    UNSAFE calls one test left in doubt are not held against the next one's."""
    from mcp_safe_retry.shared.ledgers import process_ledger

    process_ledger().clear()
    yield
    process_ledger().clear()


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["orjson", "stdlib"])
def json_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run a test with orjson (when installed) and with the standard library's parser."""
    from mcp_safe_retry.core import jsonrpc

    if request.param == "orjson" and not jsonrpc.FAST_PARSER_INSTALLED:
        pytest.skip("orjson is not installed (the [fast] extra); the stdlib run covers this")
    before = jsonrpc.use_fast_parser(request.param == "orjson")
    try:
        yield str(request.param)
    finally:
        jsonrpc.use_fast_parser(before)


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A real redis-server of this test's own on 127.0.0.1 (stopped by pid afterwards)."""
    binary = redis_server_binary()
    if binary is None:  # never reached in a run: collection stopped it (below)
        pytest.fail(HOW_TO_GET_ONE)
    server = RedisServer(binary)
    server.start()
    try:
        yield server
    finally:
        server.close()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Stop at once, with one line, when tests that need a Redis server were selected and
    none can be had (rather than fail each of them)."""
    needs = [item for item in items if "redis_server" in getattr(item, "fixturenames", ())]
    if needs and redis_server_binary() is None:
        pytest.exit(f"{len(needs)} Redis tests selected, but {HOW_TO_GET_ONE}", returncode=4)
