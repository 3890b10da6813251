"""The request and response extension keys (core/extensions.py), defined once: the public
namespace and every module that reads one use these very strings."""

from __future__ import annotations

from mcp_safe_retry import extensions
from mcp_safe_retry.core import extensions as keys


def test_the_keys_are_namespaced_and_distinct() -> None:
    values = [
        keys.IDEMPOTENCY_EXTENSION,
        keys.ORIGIN_EXTENSION,
        keys.ALLOW_DUPLICATE_EXTENSION,
        keys.CALLER_EXTENSION,
        keys.RECORD_EXTENSION,
    ]
    assert all(v.startswith("mcp_safe_retry.") for v in values)
    assert len(set(values)) == len(values)


def test_the_public_namespace_names_the_same_keys() -> None:
    for name in extensions.__all__:
        assert getattr(extensions, name) == getattr(keys, name)
