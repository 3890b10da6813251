"""Telling the hooks (instrumentation/hooks.py): what a call owes them, in order, and a hook
that fails is logged and never breaks the call or the hooks after it."""

from __future__ import annotations

import logging

import pytest

from mcp_safe_retry.core.events import Head
from mcp_safe_retry.instrumentation.hooks import NAME, publish
from tests.core.drive import answer, begin, engine, sent_message


class Ear:
    def __init__(self, heard: list[str], name: str) -> None:
        self.heard, self.name = heard, name

    def on_attempt(self, record: object, attempt: object) -> None:
        self.heard.append(f"{self.name}:attempt")

    def on_call(self, record: object) -> None:
        self.heard.append(f"{self.name}:call")


class Broken:
    def on_attempt(self, record: object, attempt: object) -> None:
        raise RuntimeError("attempt hook down")

    def on_call(self, record: object) -> None:
        raise RuntimeError("call hook down")


def test_a_call_s_notices_are_told_in_order_once(caplog: pytest.LogCaptureFixture) -> None:
    heard: list[str] = []
    call = begin(engine(hooks=[Ear(heard, "a"), Broken(), Ear(heard, "b")]))
    call.start()
    call.headed(Head(503))
    call.received(b"")
    with caplog.at_level(logging.ERROR, logger=NAME):
        publish(call.owed())
        assert heard == ["a:attempt", "b:attempt"]  # the broken hook hurt no one
        resend = call.slept()
        call.headed(Head(200, "application/json"))
        call.received(answer(sent_message(resend)["id"]))
        publish(call.owed())
        publish(call.owed())  # owed once: nothing more
    assert heard == ["a:attempt", "b:attempt", "a:attempt", "b:attempt", "a:call", "b:call"]
    failures = [r.getMessage() for r in caplog.records if r.name == NAME]
    assert len(failures) == 3
    assert all("failed in on_" in m for m in failures)
