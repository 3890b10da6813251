"""Which server a request is for (core/servers.py): the key per-server state uses."""

from __future__ import annotations

import pytest

from mcp_safe_retry.core.servers import server_key


@pytest.mark.parametrize(
    ("url", "key"),
    [
        pytest.param(
            "https://Example.COM:443/mcp?token=x#f", "https://example.com/mcp", id="https"
        ),
        pytest.param("http://u:p@host:8080/a/b", "http://host:8080/a/b", id="userinfo"),
        pytest.param("http://[::1]:80", "http://[::1]/", id="ipv6"),
        pytest.param("http://host:99999/x", "http://host/x", id="bad-port"),
    ],
)
def test_server_key(url: str, key: str) -> None:
    assert server_key(url) == key


def test_urls_of_one_server_share_a_key_and_other_paths_do_not() -> None:
    assert server_key("http://h/mcp?a=1") == server_key("HTTP://H:80/mcp#x")
    assert server_key("http://h/mcp") != server_key("http://h/other")
    assert server_key("http://h/mcp") != server_key("https://h/mcp")
