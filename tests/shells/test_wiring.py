"""Mixing up httpx and httpx2, or sync and async: a TypeError that names the class to use.

`mcp` 1.x runs on httpx and 2.x on httpx2, so a user will put the wrong retry transport
under a client, or the wrong inner transport under a retry transport. Every such mix fails
at construction or on the first request, never later or deep inside the HTTP library.
"""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import httpx2
import pytest

import mcp_safe_retry
import mcp_safe_retry.httpx2
from mcp_safe_retry.shells.wiring import check_inner, transport_kinds
from tests.helpers import ok_result, tool_call

URL = "http://mcp.test/mcp"

# (library, is_async) -> the retry transport for it, its client, and a plain inner transport
SHELLS: dict[tuple[str, bool], Any] = {
    ("httpx", False): mcp_safe_retry.RetryTransport,
    ("httpx", True): mcp_safe_retry.AsyncRetryTransport,
    ("httpx2", False): mcp_safe_retry.httpx2.RetryTransport,
    ("httpx2", True): mcp_safe_retry.httpx2.AsyncRetryTransport,
}
NAMES = {
    ("httpx", False): "mcp_safe_retry.RetryTransport",
    ("httpx", True): "mcp_safe_retry.AsyncRetryTransport",
    ("httpx2", False): "mcp_safe_retry.httpx2.RetryTransport",
    ("httpx2", True): "mcp_safe_retry.httpx2.AsyncRetryTransport",
}
CLIENTS: dict[tuple[str, bool], Any] = {
    ("httpx", False): httpx.Client,
    ("httpx", True): httpx.AsyncClient,
    ("httpx2", False): httpx2.Client,
    ("httpx2", True): httpx2.AsyncClient,
}
INNER: dict[tuple[str, bool], Any] = {
    ("httpx", False): httpx.HTTPTransport,
    ("httpx", True): httpx.AsyncHTTPTransport,
    ("httpx2", False): httpx2.HTTPTransport,
    ("httpx2", True): httpx2.AsyncHTTPTransport,
}
KINDS = list(SHELLS)


def _id(kind: tuple[str, bool]) -> str:
    return f"{kind[0]}-{'async' if kind[1] else 'sync'}"


PAIRS = [
    pytest.param(shell, inner, id=f"{_id(shell)}-shell-over-{_id(inner)}-inner")
    for shell, inner in itertools.product(KINDS, KINDS)
]


@pytest.mark.parametrize(("shell", "inner"), PAIRS)
def test_an_inner_transport_of_another_kind_is_refused_at_construction(
    shell: tuple[str, bool], inner: tuple[str, bool]
) -> None:
    transport = INNER[inner]()
    if shell == inner:
        assert SHELLS[shell](transport) is not None
        return
    with pytest.raises(TypeError, match=r"cannot wrap") as raised:
        SHELLS[shell](transport)
    message = str(raised.value)
    assert message.startswith(NAMES[shell])
    assert f"use {NAMES[inner]} " in message  # the class that does wrap it


@pytest.mark.parametrize("shell", [pytest.param(k, id=_id(k)) for k in KINDS])
def test_something_that_is_no_transport_is_refused(shell: tuple[str, bool]) -> None:
    with pytest.raises(TypeError, match=rf"needs an {shell[0]} transport to wrap, not builtins"):
        SHELLS[shell](object())


@pytest.mark.parametrize("shell", [pytest.param(k, id=_id(k)) for k in KINDS])
def test_mock_transports_serve_both_modes_of_their_library(shell: tuple[str, bool]) -> None:
    library = httpx if shell[0] == "httpx" else httpx2
    mock = library.MockTransport(lambda request: library.Response(200))
    assert transport_kinds(mock) == {(shell[0], False), (shell[0], True)}
    SHELLS[shell](mock)  # accepted: it is sync and async


class _DuckAsync:
    """A transport by duck typing only (no base class): its library cannot be told."""

    async def handle_async_request(self, request: Any) -> Any:
        raise NotImplementedError

    async def aclose(self) -> None:
        return None


def test_a_duck_typed_transport_is_judged_by_its_entry_point() -> None:
    check_inner(_DuckAsync(), mcp_safe_retry.AsyncRetryTransport())
    with pytest.raises(TypeError, match=r"an async transport; use mcp_safe_retry\.AsyncRetry"):
        check_inner(_DuckAsync(), mcp_safe_retry.RetryTransport())


def _mock(kind: tuple[str, bool]) -> Any:
    library = httpx if kind[0] == "httpx" else httpx2

    def answer(request: Any) -> Any:
        return library.Response(200, json=ok_result(1))

    return library.MockTransport(answer)


@pytest.mark.parametrize(
    ("shell", "client"),
    [
        pytest.param(shell, client, id=f"{_id(client)}-client-over-{_id(shell)}-shell")
        for shell, client in itertools.product(KINDS, KINDS)
    ],
)
@pytest.mark.anyio
async def test_a_client_of_another_kind_fails_on_its_first_request_by_name(
    shell: tuple[str, bool], client: tuple[str, bool]
) -> None:
    transport = SHELLS[shell](_mock(shell))
    http = CLIENTS[client](transport=transport)
    body = tool_call("lookup", id=1)
    try:
        if client[1]:
            call = http.post(URL, json=body)
            if shell == client:
                assert (await call).json()["id"] == 1
                return
            with pytest.raises(TypeError) as raised:
                await call
        else:
            if shell == client:
                assert http.post(URL, json=body).json()["id"] == 1
                return
            with pytest.raises(TypeError) as raised:
                http.post(URL, json=body)
    finally:
        if client[1]:
            await http.aclose()
        else:
            http.close()
    message = str(raised.value)
    client_name = f"{client[0]}.{'AsyncClient' if client[1] else 'Client'}"
    assert message == (
        f"{NAMES[shell]} cannot serve an {client_name}: "
        f"use {NAMES[client]} as the transport of an {client_name}"
    )
    assert transport.history.records() == []  # nothing was sent, nothing recorded


class _MyHttpx2Transport(httpx2.AsyncBaseTransport):
    """A user's own transport: its library is told by the base class it derives from."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200)


def test_a_users_own_transport_is_judged_by_its_base_class() -> None:
    mcp_safe_retry.httpx2.AsyncRetryTransport(_MyHttpx2Transport())
    with pytest.raises(TypeError, match=r"use mcp_safe_retry\.httpx2\.AsyncRetryTransport "):
        mcp_safe_retry.AsyncRetryTransport(_MyHttpx2Transport())


def test_nesting_a_retry_transport_of_the_other_mode_is_refused() -> None:
    with pytest.raises(TypeError, match=r"use mcp_safe_retry\.RetryTransport "):
        mcp_safe_retry.AsyncRetryTransport(mcp_safe_retry.RetryTransport())
