"""The gateway's rules as values: the headers that cross, a client's name, the token check,
where the upstream's pointers lead."""

from __future__ import annotations

import pytest

from mcp_safe_retry.gateway._paths import Origin, pointed_back
from mcp_safe_retry.gateway._rules import (
    Admission,
    Refused,
    caller_digest,
    forwarded_request_headers,
    forwarded_response_headers,
    token_matches,
)


def test_hop_by_hop_and_the_gateways_own_headers_never_cross() -> None:
    sent = [(b"Host", b"gw"), (b"Connection", b"keep-alive, X-Trace"), (b"X-Trace", b"1"),
            (b"Keep-Alive", b"5"), (b"Transfer-Encoding", b"chunked"), (b"Upgrade", b"h2c"),
            (b"X-MCP-Gateway-Token", b"t"), (b"Content-Length", b"3"),
            (b"Mcp-Session-Id", b"s"), (b"Authorization", b"Bearer c")]  # fmt: skip
    assert forwarded_request_headers(sent, None) == [
        (b"Mcp-Session-Id", b"s"), (b"Authorization", b"Bearer c")
    ]  # fmt: skip
    assert forwarded_request_headers(sent, "mine")[-1] == (b"authorization", b"Bearer mine")
    assert (b"Authorization", b"Bearer c") not in forwarded_request_headers(sent, "mine")
    answered = [(b"content-type", b"text/event-stream"), (b"date", b"x"), (b"server", b"y"),
                (b"transfer-encoding", b"chunked"), (b"mcp-session-id", b"s")]  # fmt: skip
    assert forwarded_response_headers(answered) == [
        (b"content-type", b"text/event-stream"), (b"mcp-session-id", b"s")
    ]  # fmt: skip


def test_a_client_is_named_by_a_digest_of_its_credentials() -> None:
    alice = caller_digest(None, "Bearer alice-secret")
    assert alice is not None and "alice" not in alice and len(alice) == 32
    assert alice == caller_digest(None, "Bearer alice-secret")  # every gateway alike
    assert alice != caller_digest(None, "Bearer bob-secret")
    assert alice != caller_digest("alice-secret", None)  # a token is not an Authorization
    assert caller_digest(None, None) is None


def test_tokens_are_compared_whole() -> None:
    tokens = [b"first", b"second"]
    assert token_matches("second", tokens)
    assert not token_matches("secon", tokens) and not token_matches(None, tokens)
    assert not token_matches("second", [])


@pytest.mark.parametrize(
    ("location", "back"),
    [
        pytest.param("/messages/?session_id=1", "/messages/?session_id=1", id="relative"),
        pytest.param("messages/", "/api/messages/", id="relative-to-the-path"),
        pytest.param("http://UP.test:80/x?a=1", "/x?a=1", id="same-origin"),
        pytest.param("http://other.test/x", None, id="another-host"),
        pytest.param("https://up.test/x", None, id="another-scheme"),
        pytest.param("http://up.test:8080/x", None, id="another-port"),
        pytest.param("//other.test/x", None, id="scheme-relative"),
    ],
)
def test_pointers_lead_back_to_the_gateway_or_nowhere(location: str, back: str | None) -> None:
    assert (
        pointed_back(Origin("http://up.test/api/mcp"), "http://up.test/api/mcp", location) == back
    )


@pytest.mark.parametrize(
    ("path", "headers", "status"),
    [
        pytest.param("http://x/mcp", {"host": "gw:1"}, 400, id="absolute-form"),
        pytest.param("*", {"host": "gw:1"}, 400, id="asterisk"),
        pytest.param("/mcp", {"host": "evil:1", "x-mcp-gateway-token": "t"}, 421, id="host"),
        pytest.param(
            "/mcp",
            {"host": "gw:1", "origin": "http://evil", "x-mcp-gateway-token": "t"},
            403,
            id="origin",
        ),
        pytest.param("/mcp", {"host": "gw:1"}, 401, id="no-token"),
        pytest.param("/mcp", {"host": "gw:1", "x-mcp-gateway-token": "u"}, 401, id="wrong-token"),
    ],
)
def test_admission_refuses(path: str, headers: dict[str, str], status: int) -> None:
    admission = Admission(["gw:1"], [], ["t"], "/healthz")
    with pytest.raises(Refused) as refused:
        admission.check(path, headers)
    assert refused.value.status == status


def test_admission_lets_in() -> None:
    admission = Admission(["gw:1"], ["http://app.test"], ["t"], "/healthz")
    admission.check("/mcp", {"host": "gw:1", "x-mcp-gateway-token": "t"})
    admission.check("/mcp", {"host": "GW:1", "origin": "http://gw:1", "x-mcp-gateway-token": "t"})
    admission.check(
        "/mcp", {"host": "gw:1", "origin": "http://app.test/", "x-mcp-gateway-token": "t"}
    )
    admission.check("/healthz", {"host": "gw:1"})  # the probe needs no token
    Admission(None, [], [], "/healthz").check("/mcp", {"host": "anything"})


def test_an_empty_token_is_refused() -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        Admission(None, [], ["t", ""], "/healthz")
