"""`mcp_client` sorts its keywords: client settings to the client, connection settings to
the inner transport, the rest to the retry transport (what client factories need)."""

from __future__ import annotations

from typing import Any

import httpx
import httpx2
import pytest

import mcp_safe_retry
import mcp_safe_retry.httpx2
from mcp_safe_retry import History
from mcp_safe_retry.shells.wiring import split_options
from tests.helpers import ok_result, tool_call

pytestmark = pytest.mark.anyio
LIBRARIES = [
    pytest.param(httpx, mcp_safe_retry.mcp_client, id="httpx"),
    pytest.param(httpx2, mcp_safe_retry.httpx2.mcp_client, id="httpx2"),
]


def test_split_options_sorts_by_parameter_names() -> None:
    options = {"follow_redirects": False, "verify": False, "proxy": None, "history": 1}
    client, pool, retry = split_options(options, httpx.AsyncClient, httpx.AsyncHTTPTransport)
    assert client == {"follow_redirects": False}
    assert pool == {"verify": False, "proxy": None}  # both take them: the pool, under us
    assert retry == {"history": 1}


@pytest.mark.parametrize(("library", "mcp_client"), LIBRARIES)
async def test_client_keywords_reach_the_client(library: Any, mcp_client: Any) -> None:
    seen: list[str] = []

    async def hook(request: Any) -> None:
        seen.append(request.method)

    def answer(request: Any) -> Any:
        return library.Response(200, json=ok_result(1))

    history = History()
    http = mcp_client(
        transport=library.MockTransport(answer),
        history=history,
        follow_redirects=False,
        max_redirects=2,
        event_hooks={"request": [hook]},
    )
    async with http:
        assert not http.follow_redirects and http.max_redirects == 2
        response = await http.post("http://mcp.test/mcp", json=tool_call("lookup", id=1))
    assert response.json()["id"] == 1 and seen == ["POST"]
    assert len(history.records()) == 1  # the retry transport took `history`


@pytest.mark.parametrize(("library", "mcp_client"), LIBRARIES)
async def test_it_starts_from_the_sdks_own_settings(library: Any, mcp_client: Any) -> None:
    # Both SDKs' create_mcp_http_client: 30 s timeouts, 300 s read, redirects left to the
    # SDK's transport (it follows them within the origin), the environment trusted.
    async with mcp_client() as http:
        assert http.timeout == library.Timeout(30.0, read=300.0)
        assert not http.follow_redirects
        assert http.trust_env


def test_it_has_the_settings_of_mcp2s_factory() -> None:
    from mcp.shared._httpx_utils import create_mcp_http_client

    ours, sdk = mcp_safe_retry.httpx2.mcp_client(), create_mcp_http_client()
    for setting in ("timeout", "follow_redirects", "max_redirects", "trust_env", "headers"):
        assert getattr(ours, setting) == getattr(sdk, setting), setting


@pytest.mark.parametrize(("library", "mcp_client"), LIBRARIES)
async def test_the_user_still_overrides_them(library: Any, mcp_client: Any) -> None:
    timeout = library.Timeout(5.0)
    async with mcp_client(timeout=timeout, follow_redirects=True, trust_env=False) as http:
        assert http.timeout == timeout and http.follow_redirects and not http.trust_env


@pytest.mark.parametrize(("library", "mcp_client"), LIBRARIES)
def test_connection_settings_go_to_the_inner_transport(library: Any, mcp_client: Any) -> None:
    mcp_client(verify=False, limits=library.Limits(max_connections=3), http1=True)
    with pytest.raises(TypeError, match="give verify to the inner transport you pass"):
        mcp_client(transport=library.MockTransport(lambda r: None), verify=False)


@pytest.mark.parametrize(("library", "mcp_client"), LIBRARIES)
def test_an_unknown_keyword_is_still_refused(library: Any, mcp_client: Any) -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'histroy'"):
        mcp_client(histroy=History())


# -- settings of the other HTTP library: refused at once, naming the mcp_client to use ------


class _Httpx2Auth(httpx2.Auth):
    """An auth flow of the user's own (as the SDK's OAuth provider is): judged by its base."""


class _HttpxAuth(httpx.Auth):
    pass


def _settings(library: Any) -> dict[str, Any]:
    own_auth = _HttpxAuth() if library is httpx else _Httpx2Auth()
    return {
        "timeout": {"timeout": library.Timeout(30)},
        "auth": {"auth": library.BasicAuth("user", "secret")},
        "auth-subclass": {"auth": own_auth},
        "limits": {"limits": library.Limits(max_connections=3)},
        "transport": {"transport": library.AsyncHTTPTransport()},
        "mock-transport": {"transport": library.MockTransport(lambda r: None)},
        "proxy": {"proxy": library.Proxy("http://127.0.0.1:9")},
        "mounts": {"mounts": {"all://": library.AsyncHTTPTransport()}},
        "client": {"transport": library.AsyncClient()},
    }


KINDS = list(_settings(httpx))
FACTORIES = {
    "httpx": (mcp_safe_retry.mcp_client, "mcp_safe_retry.mcp_client"),
    "httpx2": (mcp_safe_retry.httpx2.mcp_client, "mcp_safe_retry.httpx2.mcp_client"),
}
MIXES = [
    pytest.param(called, given, kind, id=f"{called}-given-{given}-{kind}")
    for called, given in (("httpx", "httpx2"), ("httpx2", "httpx"))
    for kind in KINDS
]


@pytest.mark.parametrize(("called", "given", "kind"), MIXES)
def test_a_setting_of_the_other_library_is_refused_by_name(
    called: str, given: str, kind: str
) -> None:
    factory, own = FACTORIES[called]
    settings = _settings(httpx if given == "httpx" else httpx2)[kind]
    with pytest.raises(TypeError) as raised:
        factory(**settings)
    message = str(raised.value)
    assert message.startswith(f"{own} got ")
    assert f"use {FACTORIES[given][1]}," in message


@pytest.mark.parametrize("called", ["httpx", "httpx2"])
@pytest.mark.parametrize("kind", KINDS)
async def test_settings_of_its_own_library_are_taken(called: str, kind: str) -> None:
    factory, _ = FACTORIES[called]
    settings = _settings(httpx if called == "httpx" else httpx2)[kind]
    if kind == "client":  # a client is no transport, of either library
        with pytest.raises(TypeError, match=rf"needs an {called} transport to wrap, not {called}"):
            factory(**settings)
        return
    async with factory(**settings):
        pass


def test_the_example_of_the_issue() -> None:
    with pytest.raises(TypeError, match=r"use mcp_safe_retry\.mcp_client,"):
        mcp_safe_retry.httpx2.mcp_client(timeout=httpx.Timeout(30))
    with pytest.raises(TypeError, match=r"use mcp_safe_retry\.httpx2\.mcp_client,"):
        mcp_safe_retry.mcp_client(timeout=httpx2.Timeout(30))
