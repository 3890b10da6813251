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


def test_idempotent_tools_are_declared_by_the_policy() -> None:
    policy = RetryPolicy(tools={"set_status": "idempotent"})
    assert policy.idempotency("tools/call", "set_status") is Idempotency.IDEMPOTENT


def test_idempotent_hint_is_trusted_only_when_asked_and_only_for_writes() -> None:
    ro, idem = frozenset({"lookup"}), frozenset({"upsert"})
    assert RetryPolicy().idempotency("tools/call", "upsert", ro, idem) is Idempotency.UNSAFE
    trusting = RetryPolicy(trust_annotations=True)
    assert trusting.idempotency("tools/call", "upsert", ro, idem) is Idempotency.IDEMPOTENT
    assert trusting.idempotency("tools/call", "lookup", ro, idem) is Idempotency.READ
    configured = RetryPolicy(trust_annotations=True, tools={"upsert": Idempotency.UNSAFE})
    assert configured.idempotency("tools/call", "upsert", ro, idem) is Idempotency.UNSAFE


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        pytest.param("tasks/get", Idempotency.READ, id="tasks-get-reads"),
        pytest.param("tasks/cancel", Idempotency.IDEMPOTENT, id="tasks-cancel-acknowledges"),
        pytest.param("tasks/update", Idempotency.IDEMPOTENT, id="tasks-update-acknowledges"),
        pytest.param("tasks/list", Idempotency.UNSAFE, id="gone-in-2026"),
    ],
)
def test_the_tasks_extension_methods(method: str, expected: Idempotency) -> None:
    assert RetryPolicy().idempotency(method, None) is expected
