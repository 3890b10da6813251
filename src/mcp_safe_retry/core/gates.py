"""Who hears what the shell's executor met carrying out a command (a response head, a body,
a network error, a wait's end, a gate's answer) and answers the next command: a ``Gate``.

The call is one (``Call``). A hedged call's race has one per copy (``CopyGate``: the copy's
events go to ``Hedging`` under its number) and one for a hedge still asked for
(``HedgeGate``), so that one executor carries out a call never hedged and every copy of a
race alike (``shells/bodies_httpx_async.Executor.run``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from .attempt_kinds import ErrorKind
from .commands import Next

if TYPE_CHECKING:
    from .events import Head
    from .hedging import Hedging

__all__ = ["CopyGate", "Gate", "HedgeGate"]


class Gate(Protocol):
    """Who hears what the shell's executor met carrying out a command, and answers the next:
    the call (``Call``), or one copy of a hedged call's race (``CopyGate``, ``HedgeGate``)."""

    def headed(self, head: Head) -> Next: ...

    def received(self, body: bytes) -> Next: ...

    def failed(self, error: BaseException, kind: ErrorKind, detail: str) -> Next: ...

    def slept(self) -> Next: ...

    def answered(self, allowed: bool) -> Next: ...


class CopyGate:
    """Copy ``number`` of a race as the shell's executor sees it: it tells the gate what the
    copy met and carries out the command the race answers, as for a call never hedged
    (``Gate``). Number 0: the race before its first copy (the breaker asked)."""

    __slots__ = ("_hedging", "_number")

    def __init__(self, hedging: Hedging, number: int) -> None:
        self._hedging = hedging
        self._number = number

    def headed(self, head: Head) -> Next:
        return self._hedging.headed(self._number, head)

    def received(self, body: bytes) -> Next:
        return self._hedging.received(self._number, body)

    def failed(self, error: BaseException, kind: ErrorKind, detail: str) -> Next:
        return self._hedging.failed(self._number, error, kind, detail)

    def slept(self) -> Next:
        return self._hedging.slept()

    def answered(self, allowed: bool) -> Next:
        return self._hedging.answered(allowed)


class HedgeGate(CopyGate):
    """A hedge not sent yet, as the shell's executor asks the budget and the breaker about it
    (``Hedging.hedge``): their answers are the hedge's (``Hedging.hedge_answered``)."""

    __slots__ = ()

    def __init__(self, hedging: Hedging) -> None:
        super().__init__(hedging, 0)

    def answered(self, allowed: bool) -> Next:
        return self._hedging.hedge_answered(allowed)
