"""Holders of live shared state: a copy is the object itself; a pickle finds it again.

A ``History``, a budget, a breaker or a hook is shared on purpose: every transport that holds
it feeds or reads the same one. Frameworks deep-copy their settings (smolagents' mcpadapt
deep-copies the client factory with everything bound into it), and a copy would silently
un-share the state: records sent to a History nobody reads, a budget counted twice. So, as
``copy.deepcopy(logging.getLogger("x")) is logging.getLogger("x")``:

- ``copy.copy`` and ``copy.deepcopy`` return the object itself;
- a pickle carries a token and a recipe. Loaded in the process that holds the object, it is
  that object. Loaded where the object is not (another process, or after it was dropped),
  the recipe builds a fresh one with the same settings, kept under the token, so everything
  unpickled there with that token shares it too.

Some of them hold state not yet sent to where the others read it (a shared breaker's trip
on its way to Redis): they ``Flushes``, and whoever ends their use (a transport closed, the
interpreter exiting) calls ``flush_all`` on them.

The tokens must never repeat, within a process or across processes: they are drawn from the
source handed to ``draw_tokens_from`` (``mcp_safe_retry`` hands it ``secrets.token_hex``
when it is imported), as the core draws no randomness of its own.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable
from typing import Any, Protocol, Self, runtime_checkable

__all__ = ["Flushes", "Live", "draw_tokens_from", "flush_all", "flushing"]

_tokens: weakref.WeakKeyDictionary[Live, str] = weakref.WeakKeyDictionary()
_objects: weakref.WeakValueDictionary[str, Live] = weakref.WeakValueDictionary()
_lock = threading.Lock()  # held to build a missing object too: one per token, never two
_token_source: list[Callable[[], str]] = []  # the one source, once handed in


def draw_tokens_from(source: Callable[[], str]) -> Callable[[], str] | None:
    """Draw the tokens of objects pickled from now on from ``source``: a string that never
    repeats, in this process or any other, each time it is called. Returns the source it
    replaces (None: none was handed in yet)."""
    with _lock:
        previous = _token_source[0] if _token_source else None
        _token_source[:] = [source]
    return previous


class Live:
    """A base for holders of live shared state (see the module documentation).

    A subclass says how to build a fresh one elsewhere in ``_recipe``: a callable that
    pickles (``functools.partial(cls, **settings)``), or raises ``TypeError`` saying why the
    object cannot leave this process.
    """

    __slots__ = ()

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return self

    def __reduce__(self) -> tuple[Callable[[str, Callable[[], Live]], Live], tuple[Any, ...]]:
        recipe = self._recipe()
        with _lock:
            token = _tokens.get(self)
            if token is None:
                if not _token_source:
                    raise TypeError(f"{type(self).__name__}: no token source was handed in")
                token = _token_source[0]()
                _tokens[self] = token
                _objects[token] = self
        return _restore, (token, recipe)

    def _recipe(self) -> Callable[[], Live]:
        raise NotImplementedError


def _restore(token: str, recipe: Callable[[], Live]) -> Live:
    """The object pickled under ``token`` if this process holds it, else a fresh one."""
    with _lock:
        found = _objects.get(token)
        if found is None:
            found = recipe()
            _tokens[found] = token
            _objects[token] = found
        return found


@runtime_checkable
class Flushes(Protocol):
    """A holder of shared state that sends what it holds for the others on ``flush``."""

    def flush(self, timeout: float | None = None) -> None:
        """Send what is pending now and wait for it at most ``timeout`` seconds (None: the
        object's own timeout); ``flush(0.0)`` starts the send and returns at once. Never
        raises, never closes anything."""


def flushing(*objects: object) -> tuple[Flushes, ...]:
    """Those of ``objects`` that flush (a shared budget or breaker; a local one does not)."""
    return tuple(x for x in objects if isinstance(x, Flushes))


def flush_all(objects: Iterable[Flushes]) -> None:
    """Start every object's flush, then wait for each (within its own timeout): several of
    them on one hung server wait about one timeout, not one each."""
    objects = list(objects)
    for shared in objects:
        shared.flush(0.0)
    for shared in objects:
        shared.flush()
