"""What a call's parts may read of their transport (core/context.py): the engine provides
every member of ``CallContext``, and a call runs on any object that does."""

from __future__ import annotations

import inspect

from mcp_safe_retry.core.context import CallContext, Reopens
from mcp_safe_retry.core.engine import Engine
from tests.core.drive import engine


def _members(protocol: type) -> set[str]:
    names = set(protocol.__annotations__)
    names |= {n for n, v in vars(protocol).items() if inspect.isfunction(v)}
    return {n for n in names if not n.startswith("_")}


def test_the_engine_provides_every_member_of_the_context() -> None:
    e: CallContext = engine()
    missing = {name for name in _members(CallContext) if not hasattr(e, name)}
    assert missing == set()
    assert _members(CallContext) >= {"clock", "wall_clock", "rand", "policy", "fresh_id"}


def test_the_engine_never_appears_in_what_the_context_names() -> None:
    hints = " ".join(str(v) for v in CallContext.__annotations__.values())
    assert Engine.__name__ not in hints
    assert _members(Reopens) == {"reopen"}
