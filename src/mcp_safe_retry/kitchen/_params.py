"""Typed reading of a scenario's JSON params, and the filter saying which POSTs a fault hits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import attrs

from mcp_safe_retry.kitchen._facts import RequestFacts

ANY_METHOD = "*"

_T = TypeVar("_T", bound=str)


class ScenarioError(ValueError):
    """A scenario name or one of its params is invalid."""


@attrs.frozen
class Match:
    """Which POSTs of a run a fault hits.

    Matching POSTs are numbered 1, 2, ... in arrival order; the fault hits numbers
    `on_invocation` up to `on_invocation + times - 1` (all from `on_invocation` on
    when `times` is None).

    Attributes:
        methods: JSON-RPC methods that match; None matches every POST.
        tool: Only `tools/call` POSTs naming this tool match.
        on_invocation: 1-based number of the first matching POST hit.
        times: How many consecutive matching POSTs are hit; None for all.
        requests_only: Notifications never match (a fault that answers with a
            JSON-RPC message needs an id to answer).
    """

    methods: frozenset[str] | None
    tool: str | None = None
    on_invocation: int = 1
    times: int | None = 1
    requests_only: bool = False

    def selects(self, facts: RequestFacts) -> bool:
        """Return whether this POST counts as a matching one."""
        if self.requests_only and not facts.is_request:
            return False
        if self.methods is not None and facts.method not in self.methods:
            return False
        return self.tool is None or facts.tool == self.tool

    def hits(self, number: int) -> bool:
        """Return whether the `number`-th matching POST is hit."""
        if number < self.on_invocation:
            return False
        return self.times is None or number < self.on_invocation + self.times


class Params:
    """Reads typed values out of one scenario's params and rejects keys nobody read."""

    def __init__(self, scenario: str, raw: Mapping[str, Any]) -> None:
        """Wrap the params object given for `scenario`."""
        if not isinstance(raw, Mapping):
            raise ScenarioError(f"{scenario}: params must be a JSON object")
        self._scenario = scenario
        self._raw = dict(raw)
        self._read: set[str] = set()

    def _error(self, key: str, expected: str) -> ScenarioError:
        return ScenarioError(
            f"{self._scenario}: {key!r} must be {expected}, got {self._raw[key]!r}"
        )

    def _get(self, key: str) -> Any:
        self._read.add(key)
        return self._raw.get(key)

    def integer(
        self, key: str, default: int, *, minimum: int | None = None, maximum: int | None = None
    ) -> int:
        """Return an integer param within [minimum, maximum]."""
        value = self.optional_integer(key, minimum=minimum, maximum=maximum)
        return default if value is None else value

    def optional_integer(
        self, key: str, *, minimum: int | None = None, maximum: int | None = None
    ) -> int | None:
        """Return an integer param, or None when absent or null."""
        value = self._get(key)
        if value is None:
            return None
        # bool is an int subclass, and `true` is never meant as a count.
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._error(key, "an integer")
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise self._error(key, f"within {minimum}..{maximum}")
        return value

    def nullable_integer(
        self, key: str, default: int | None, *, minimum: int | None = None
    ) -> int | None:
        """Return an integer param: `default` when absent, None when given as null."""
        if key not in self._raw:
            return default
        return self.optional_integer(key, minimum=minimum)

    def string(self, key: str, default: str) -> str:
        """Return a string param."""
        value = self.optional_string(key)
        return default if value is None else value

    def optional_string(self, key: str) -> str | None:
        """Return a string param, or None when absent or null."""
        value = self._get(key)
        if value is not None and not isinstance(value, str):
            raise self._error(key, "a string")
        return value

    def choice(self, key: str, default: _T, choices: Sequence[_T]) -> _T:
        """Return a string param that must be one of `choices`."""
        value = self._get(key)
        if value is None:
            return default
        for choice in choices:
            if value == choice:
                return choice
        raise self._error(key, f"one of {list(choices)}")

    def boolean(self, key: str, default: bool) -> bool:
        """Return a boolean param."""
        value = self._get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self._error(key, "a boolean")
        return value

    def integers(self, key: str, *, minimum: int, maximum: int) -> tuple[int, ...]:
        """Return a required non-empty list of integers within [minimum, maximum]."""
        value = self._get(key)
        if (
            not isinstance(value, list)
            or not value
            or not all(
                isinstance(v, int) and not isinstance(v, bool) and minimum <= v <= maximum
                for v in value
            )
        ):
            raise ScenarioError(
                f"{self._scenario}: {key!r} must be a non-empty list of integers within "
                f"{minimum}..{maximum}, got {value!r}"
            )
        return tuple(value)

    def raw(self, key: str) -> Any:
        """Return a param as given (any JSON value), None when absent."""
        return self._get(key)

    def methods(self, default: str | None) -> frozenset[str] | None:
        """Return the `method` filter: a name, a list of names, or "*" for every POST."""
        value = self._get("method")
        if value is None:
            value = default
        if value is None or value == ANY_METHOD:
            return None
        if isinstance(value, str):
            return frozenset({value})
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return frozenset(value)
        raise self._error("method", 'a method name, a list of names, or "*"')

    def match(
        self,
        *,
        default_method: str | None = "tools/call",
        default_times: int | None = 1,
        requests_only: bool = False,
    ) -> Match:
        """Return the filter read from `method`, `tool`, `onInvocation` and `times`."""
        return Match(
            methods=self.methods(default_method),
            tool=self.optional_string("tool"),
            on_invocation=self.integer("onInvocation", 1, minimum=1),
            times=self.nullable_integer("times", default_times, minimum=0),
            requests_only=requests_only,
        )

    def done(self) -> None:
        """Reject params no reader asked for: a typo must not silently mean the default."""
        unknown = sorted(set(self._raw) - self._read)
        if unknown:
            raise ScenarioError(f"{self._scenario}: unknown params {unknown}")
