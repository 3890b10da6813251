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
from mcp_safe_retry.shells.support import split_options
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
async def test_redirects_are_followed_by_default(library: Any, mcp_client: Any) -> None:
    async with mcp_client() as http:
        assert http.follow_redirects


@pytest.mark.parametrize(("library", "mcp_client"), LIBRARIES)
def test_connection_settings_go_to_the_inner_transport(library: Any, mcp_client: Any) -> None:
    mcp_client(verify=False, limits=library.Limits(max_connections=3), http1=True)
    with pytest.raises(TypeError, match="give verify to the inner transport you pass"):
        mcp_client(transport=library.MockTransport(lambda r: None), verify=False)


@pytest.mark.parametrize(("library", "mcp_client"), LIBRARIES)
def test_an_unknown_keyword_is_still_refused(library: Any, mcp_client: Any) -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'histroy'"):
        mcp_client(histroy=History())
