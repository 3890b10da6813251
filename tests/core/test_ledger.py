"""What one call leaves behind (core/ledger.py): its record, what its hooks are told and when,
its entry in the history, driven through a call's events."""

from __future__ import annotations

import json

from mcp_safe_retry.core.commands import Send
from mcp_safe_retry.core.events import Head
from mcp_safe_retry.instrumentation.hooks import publish
from tests.core.drive import JSON, answer, begin, engine


def test_hooks_hear_nothing_until_the_shell_publishes() -> None:
    heard: list[str] = []

    class Ear:
        def on_attempt(self, record: object, attempt: object) -> None:
            heard.append("attempt")

        def on_call(self, record: object) -> None:
            heard.append("call")

    call = begin(engine(hooks=[Ear()]))
    call.start()
    call.headed(Head(503))
    call.received(b"")
    assert heard == []  # the decision told no one
    publish(call.owed())
    assert heard == ["attempt"]
    resend = call.slept()
    assert isinstance(resend, Send) and resend.content is not None
    call.headed(JSON)
    call.received(answer(json.loads(resend.content)["id"]))
    publish(call.owed())
    assert heard == ["attempt", "attempt", "call"]
