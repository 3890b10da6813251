"""`mcp_client` honours HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY as httpx and httpx2
do (``trust_env=True``), with the retry layer above the proxy: a real forward proxy on
127.0.0.1 sees every attempt, and one engine (one history, budget, breaker) serves every route.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest

import mcp_safe_retry
import mcp_safe_retry.httpx2
from mcp_safe_retry import History, Idempotency, RetryPolicy
from mcp_safe_retry.records import RetryOrigin
from tests.helpers import tool_call
from tests.proxy_support import ForwardProxy, ScriptedEndpoint

pytestmark = pytest.mark.anyio
POLICY = RetryPolicy(tools={"lookup": Idempotency.READ}, initial_backoff=0)
FLAVOURS = [
    pytest.param(httpx, mcp_safe_retry.mcp_client, id="httpx"),
    pytest.param(httpx2, mcp_safe_retry.httpx2.mcp_client, id="httpx2"),
]


@pytest.fixture(autouse=True)
def no_proxy_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start from an environment without proxy settings (any case)."""
    for name in list(os.environ):
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)


@pytest.fixture
def proxy() -> Iterator[ForwardProxy]:
    with ForwardProxy() as running:
        yield running


async def lookup(factory: Any, url: str, **options: Any) -> tuple[Any, History]:
    history = History()
    async with factory(policy=POLICY, history=history, **options) as http:
        answer = await http.post(f"{url}/mcp", json=tool_call("lookup", id=1))
    return answer, history


@pytest.mark.parametrize(("library", "factory"), FLAVOURS)
@pytest.mark.parametrize("variable", ["HTTP_PROXY", "ALL_PROXY", "http_proxy"])
async def test_retries_go_through_the_environments_proxy(
    library: Any, factory: Any, variable: str, proxy: ForwardProxy, monkeypatch: Any
) -> None:
    monkeypatch.setenv(variable, proxy.url)
    with ScriptedEndpoint([503, 200]) as endpoint:
        answer, history = await lookup(factory, endpoint.url)
    assert answer.status_code == 200 and answer.json()["id"] == 1
    # Two POSTs through the proxy: the retry layer sits above it, not under it.
    assert proxy.forwarded == [("POST", f"{endpoint.url}/mcp")] * 2
    assert len(endpoint.posts) == 2
    (record,) = history.records()
    assert record.http_statuses == (503, 200)
    assert [a.retry_origin for a in record.attempts] == [RetryOrigin.NONE, RetryOrigin.SDK]


@pytest.mark.parametrize(("library", "factory"), FLAVOURS)
@pytest.mark.parametrize("no_proxy", ["127.0.0.1", "*"])
async def test_no_proxy_takes_the_direct_route_still_retried(
    library: Any, factory: Any, no_proxy: str, proxy: ForwardProxy, monkeypatch: Any
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", no_proxy)
    with ScriptedEndpoint([503, 200]) as endpoint:
        answer, history = await lookup(factory, endpoint.url)
    assert answer.status_code == 200 and proxy.forwarded == []
    assert len(endpoint.posts) == 2 and history.records()[0].http_statuses == (503, 200)


@pytest.mark.parametrize(("library", "factory"), FLAVOURS)
async def test_trust_env_false_ignores_the_proxy(
    library: Any, factory: Any, proxy: ForwardProxy, monkeypatch: Any
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    with ScriptedEndpoint([503, 200]) as endpoint:
        answer, history = await lookup(factory, endpoint.url, trust_env=False)
    assert answer.status_code == 200 and proxy.forwarded == []
    assert len(endpoint.posts) == 2 and len(history.records()) == 1


@pytest.mark.parametrize(("library", "factory"), FLAVOURS)
async def test_an_explicit_proxy_replaces_the_environments(
    library: Any, factory: Any, proxy: ForwardProxy, monkeypatch: Any
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    with ScriptedEndpoint([503, 200]) as endpoint:
        answer, history = await lookup(factory, endpoint.url, proxy=proxy.url)
    assert answer.status_code == 200 and len(proxy.forwarded) == 2
    assert history.records()[0].http_statuses == (503, 200)


@pytest.mark.parametrize(("library", "factory"), FLAVOURS)
async def test_an_inner_transport_given_turns_the_environment_off(
    library: Any, factory: Any, proxy: ForwardProxy, monkeypatch: Any
) -> None:
    # As an httpx client given a transport does: the transport is what sends.
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    with ScriptedEndpoint([200]) as endpoint:
        answer, _ = await lookup(factory, endpoint.url, transport=library.AsyncHTTPTransport())
    assert answer.status_code == 200 and proxy.forwarded == []


@pytest.mark.parametrize(("library", "factory"), FLAVOURS)
async def test_every_route_shares_one_engine(
    library: Any, factory: Any, proxy: ForwardProxy, monkeypatch: Any
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    history = History()
    with ScriptedEndpoint([503, 200]) as far, ScriptedEndpoint([503, 200]) as near:
        monkeypatch.setenv("NO_PROXY", near.url)  # this origin only: direct
        async with factory(policy=POLICY, history=history) as http:
            for endpoint in (far, near):
                answer = await http.post(f"{endpoint.url}/mcp", json=tool_call("lookup", id=1))
                assert answer.status_code == 200
    assert proxy.forwarded == [("POST", f"{far.url}/mcp")] * 2
    assert len(near.posts) == 2
    # One history (and one budget, breaker and session table) for both routes.
    assert [r.http_statuses for r in history.records()] == [(503, 200), (503, 200)]


@pytest.mark.parametrize(("library", "factory"), FLAVOURS)
async def test_mounts_given_are_wrapped_too(library: Any, factory: Any) -> None:
    seen: list[str] = []

    def answer(request: Any) -> Any:
        seen.append(str(request.url))
        return library.Response(
            503 if len(seen) == 1 else 200,
            json={"jsonrpc": "2.0", "id": 1, "result": {"content": []}},
        )

    history = History()
    mounts = {"http://mounted.test": library.MockTransport(answer)}
    async with factory(policy=POLICY, history=history, mounts=mounts) as http:
        response = await http.post("http://mounted.test/mcp", json=tool_call("lookup", id=1))
    assert response.status_code == 200 and len(seen) == 2
    assert history.records()[0].http_statuses == (503, 200)


@pytest.mark.parametrize(
    ("shell", "library", "inner"),
    [
        pytest.param(mcp_safe_retry.RetryTransport, httpx, "HTTPTransport", id="httpx-sync"),
        pytest.param(
            mcp_safe_retry.AsyncRetryTransport, httpx, "AsyncHTTPTransport", id="httpx-async"
        ),
        pytest.param(
            mcp_safe_retry.httpx2.RetryTransport, httpx2, "HTTPTransport", id="httpx2-sync"
        ),
        pytest.param(
            mcp_safe_retry.httpx2.AsyncRetryTransport,
            httpx2,
            "AsyncHTTPTransport",
            id="httpx2-async",
        ),
    ],
)
def test_over_shares_the_engine_and_checks_the_inner_transport(
    shell: Any, library: Any, inner: str
) -> None:
    retry = shell(getattr(library, inner)())
    twin = retry.over(getattr(library, inner)())
    assert twin is not retry and twin.engine is retry.engine
    assert twin.history is retry.history and twin.budget is retry.budget
    other = httpx2 if library is httpx else httpx
    with pytest.raises(TypeError, match="cannot wrap"):
        retry.over(getattr(other, inner)())
