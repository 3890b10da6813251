"""Which calls may be sent again (core/idempotency.py): the policy's tools, the protocol's
reads, and tool annotations trusted only when asked."""

from __future__ import annotations

import pytest

from mcp_safe_retry import Idempotency, RetryPolicy
from mcp_safe_retry.core.idempotency import READ_METHODS

IDEMPOTENCY = [
    pytest.param("tools/call", "lookup", {}, Idempotency.UNSAFE, id="unconfigured-tool"),
    pytest.param("tools/call", "lookup", {"lookup": "read"}, Idempotency.READ, id="configured"),
    pytest.param("tools/call", "get_user", {"get_*": "read"}, Idempotency.READ, id="pattern"),
    pytest.param(
        "tools/call",
        "get_user",
        {"get_*": "read", "get_user": "unsafe"},
        Idempotency.UNSAFE,
        id="exact-wins",
    ),
    pytest.param("tools/call", None, {"*": "read"}, Idempotency.UNSAFE, id="no-tool-name"),
    pytest.param("tools/call", "x", {"*": "read"}, Idempotency.READ, id="star"),
    pytest.param("sampling/createMessage", None, {}, Idempotency.UNSAFE, id="unknown-method"),
    pytest.param("resources/subscribe", None, {}, Idempotency.UNSAFE, id="subscribe"),
    pytest.param("logging/setLevel", None, {}, Idempotency.UNSAFE, id="set-level"),
]


@pytest.mark.parametrize(("method", "tool", "tools", "expected"), IDEMPOTENCY)
def test_idempotency(
    method: str, tool: str | None, tools: dict[str, str], expected: Idempotency
) -> None:
    assert RetryPolicy(tools=tools).idempotency(method, tool) is expected  # type: ignore[arg-type]


@pytest.mark.parametrize("method", sorted(READ_METHODS))
def test_protocol_reads_are_read(method: str) -> None:
    assert RetryPolicy().idempotency(method, None) is Idempotency.READ


def test_annotations_are_trusted_only_when_asked() -> None:
    ro = frozenset({"lookup"})
    assert RetryPolicy().idempotency("tools/call", "lookup", ro) is Idempotency.UNSAFE
    trusting = RetryPolicy(trust_annotations=True)
    assert trusting.idempotency("tools/call", "lookup", ro) is Idempotency.READ
    assert trusting.idempotency("tools/call", "charge", ro) is Idempotency.UNSAFE
    configured = RetryPolicy(trust_annotations=True, tools={"lookup": Idempotency.UNSAFE})
    assert configured.idempotency("tools/call", "lookup", ro) is Idempotency.UNSAFE
