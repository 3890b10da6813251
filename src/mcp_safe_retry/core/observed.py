"""What a transport learns from the traffic it carries, for the calls that come later."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from .jsonrpc import JSON, RequestFacts, RequestId, dumps
from .outcomes import Classification, Outcome
from .session import Handshake, Sessions

__all__ = ["LEARNED_METHODS", "GiveUp", "Observed", "client_info"]

GiveUp = Callable[[], None]
"""The shell's way to give a hedged call's race up: the core keeps it and hands it back."""

LEARNED_METHODS = frozenset({"initialize", "tools/list"})
"""The methods whose answers tell something about later calls."""


class Unseen(Protocol):
    """A guarded call in flight, as a cancellation marks it: its answer will go unseen."""

    def gave_up(self) -> None: ...


class Observed:
    """The client's name, the protocol version, the ``initialize`` that opened each session
    (to renew it once the server expires it), the read-only tools, and the ids re-sent
    requests went out under (so a cancellation can follow them, into a renewed session
    too). Safe across threads.

    Args:
        sessions: where sessions are kept (the transport's); a renewed session's old and
            new ids name one session here.
    """

    def __init__(self, sessions: Sessions | None = None) -> None:
        self._lock = threading.Lock()
        self._sessions = sessions if sessions is not None else Sessions()
        self.client: str | None = None
        self.protocol_version: str | None = None
        # The tools whose readOnlyHint is true, and those whose idempotentHint is true (and
        # not readOnlyHint), replaced together (the engine's key of a request's kind).
        self.hints: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())
        self._wire_ids: dict[tuple[str | None, RequestId], RequestId] = {}
        self._races: dict[tuple[str | None, RequestId], GiveUp] = {}
        self._watched: dict[tuple[str | None, RequestId], Unseen] = {}  # guarded, in flight

    def learn(
        self,
        facts: RequestFacts,
        classification: Classification,
        message: JSON,
        session: str | None = None,
    ) -> None:
        """Keep what an answered ``initialize`` (that opened ``session``) or ``tools/list``
        tells."""
        if facts.method not in LEARNED_METHODS:
            return
        if classification.outcome is not Outcome.RPC_SUCCESS or not isinstance(message, dict):
            return
        result = message.get("result")
        if not isinstance(result, dict):
            return
        if facts.method == "initialize":
            version = result.get("protocolVersion")
            version = version if isinstance(version, str) else None
            if session is not None:
                self._sessions.opened(session, Handshake(facts.exact_message(), version))
            with self._lock:
                if version is not None:
                    self.protocol_version = version
                self.client = client_info(facts) or self.client
        elif facts.method == "tools/list" and isinstance(result.get("tools"), list):
            read_only: set[str] = set()
            idempotent: set[str] = set()
            named: set[str] = set()
            for tool in result["tools"]:
                if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                    continue
                named.add(tool["name"])
                notes = tool.get("annotations")
                if not isinstance(notes, dict):
                    continue
                if notes.get("readOnlyHint") is True:
                    read_only.add(tool["name"])
                elif notes.get("idempotentHint") is True:  # meaningful only for a write
                    idempotent.add(tool["name"])
            with self._lock:
                before, idempotent_before = self.hints
                self.hints = (
                    (before - named) | read_only,
                    (idempotent_before - named) | idempotent,
                )

    @property
    def read_only_tools(self) -> frozenset[str]:
        """The tools seen whose ``readOnlyHint`` is true."""
        return self.hints[0]

    @read_only_tools.setter
    def read_only_tools(self, tools: frozenset[str]) -> None:
        self.hints = (frozenset(tools), self.hints[1])

    @property
    def idempotent_tools(self) -> frozenset[str]:
        """The tools seen whose ``idempotentHint`` is true and ``readOnlyHint`` is not."""
        return self.hints[1]

    def resent(self, session: str | None, caller_id: RequestId, wire_id: RequestId) -> None:
        """A request with ``caller_id`` now goes out as ``wire_id``."""
        key = (self._sessions.first(session), caller_id)
        with self._lock:
            self._wire_ids[key] = wire_id

    def settled(self, session: str | None, caller_id: RequestId) -> None:
        """The re-sent request is over: nothing left to cancel."""
        key = (self._sessions.first(session), caller_id)
        with self._lock:
            self._wire_ids.pop(key, None)

    def racing(self, session: str | None, caller_id: RequestId, cancel: GiveUp | None) -> None:
        """A hedged call with ``caller_id`` races copies (``cancel``, the shell's, gives it
        up: kept and handed back, never called here), or, for None, no longer does."""
        key = (self._sessions.first(session), caller_id)
        with self._lock:
            if cancel is None:
                self._races.pop(key, None)
            else:
                self._races[key] = cancel

    def watching(self, session: str | None, caller_id: RequestId, books: Unseen | None) -> None:
        """A guarded call with ``caller_id`` is in flight (``books``: told if its caller
        gives up on it), or, for None, is over."""
        key = (self._sessions.first(session), caller_id)
        with self._lock:
            if books is None:
                self._watched.pop(key, None)
            else:
                self._watched[key] = books

    def caller_gone(self, facts: RequestFacts, session: str | None) -> None:
        """A ``notifications/cancelled``: the guarded call it names, if one is in flight,
        is no longer awaited, so an answer to it will be one its caller never saw."""
        named = _cancelled_id(facts)
        if named is None:
            return
        with self._lock:
            books = self._watched.get((self._sessions.first(session), named[2]))
        if books is not None:
            books.gave_up()

    def remap_cancellation(self, facts: RequestFacts, session: str | None) -> bytes | None:
        """A ``notifications/cancelled`` pointed at the id its request really went out
        under; None when it needs no change."""
        named = _cancelled_id(facts)
        if named is None:
            return None
        message, params, request_id = named
        with self._lock:
            wire_id = self._wire_ids.get((self._sessions.first(session), request_id))
        if wire_id is None:
            return None
        return dumps({**message, "params": {**params, "requestId": wire_id}})

    def race_cancelled(self, facts: RequestFacts, session: str | None) -> GiveUp | None:
        """What gives up the hedged call a ``notifications/cancelled`` names, if it races
        (the shell calls it: the caller's cancellation ends every copy)."""
        named = _cancelled_id(facts)
        if named is None:
            return None
        with self._lock:
            return self._races.get((self._sessions.first(session), named[2]))


def _cancelled_id(facts: RequestFacts) -> tuple[dict[str, JSON], dict[str, JSON], RequestId] | None:
    """A ``notifications/cancelled``'s message, params and the request id it names."""
    if facts.method != "notifications/cancelled":
        return None
    message = facts.exact_message()
    params = message.get("params")
    if not isinstance(params, dict):
        return None
    request_id = params.get("requestId")
    if not isinstance(request_id, str | int):
        return None
    return message, params, request_id


def client_info(facts: RequestFacts) -> str | None:
    """``name@version`` from an ``initialize`` request's ``clientInfo``."""
    if facts.method != "initialize":
        return None
    params = facts.exact_message().get("params")
    info = params.get("clientInfo") if isinstance(params, dict) else None
    if not isinstance(info, dict) or not isinstance(info.get("name"), str):
        return None
    version = info.get("version")
    return f"{info['name']}@{version}" if isinstance(version, str) else info["name"]
