"""The adapters of mcp_safe_retry.frameworks in the main environment, without their frameworks.

Each is tested end to end against its real framework in tests/frameworks (scripts/frameworks.sh);
here: they import without it, and fail at once, by name, where they must.
"""

from __future__ import annotations

import pytest

from mcp_safe_retry import mcp_client
from mcp_safe_retry.frameworks import mcp_use, strands

pytestmark = pytest.mark.anyio


async def test_strands_transport_refuses_a_client_of_the_library_mcp_does_not_use() -> None:
    # This environment has mcp 2.x, which sends through httpx2; mcp_client is the httpx one.
    transport = strands.streamable_http("http://127.0.0.1:9/mcp", mcp_client)
    with pytest.raises(TypeError, match=r"use mcp_safe_retry\.httpx2\.mcp_client$"):
        async with transport():
            pytest.fail("the transport opened")


def test_mcp_use_connector_needs_mcp_use_and_says_so() -> None:
    with pytest.raises(ModuleNotFoundError, match="mcp_use"):
        mcp_use.http_connector("http://127.0.0.1:9/mcp", mcp_client)
