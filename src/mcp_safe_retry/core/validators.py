"""Validators and converters of setting values, shared by the policy, the hedge settings and
the transports: each refuses a value by naming the setting, the value and what is allowed
(``TypeError`` for a value of the wrong type, ``ValueError`` for one out of range)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from enum import StrEnum
from typing import Any, TypeVar

import attrs

__all__ = [
    "at_least",
    "boolean",
    "callable_setting",
    "check_callable",
    "check_instance",
    "check_protocol",
    "finite_positive",
    "fraction",
    "integer",
    "member",
    "non_negative",
    "positive_or_none",
    "statuses",
]

E = TypeVar("E", bound=StrEnum)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _refuse(name: str, allowed: str, value: object) -> None:
    error = ValueError if _number(value) else TypeError
    raise error(f"{name} must be {allowed}, got {value!r}")


def non_negative(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (_number(value) and math.isfinite(value) and value >= 0):
        _refuse(attribute.name, "a finite number >= 0", value)


def positive_or_none(
    _: object, attribute: attrs.Attribute[float | None], value: float | None
) -> None:
    if value is not None and not (_number(value) and math.isfinite(value) and value > 0):
        _refuse(attribute.name, "None or a finite number > 0", value)


def fraction(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (_number(value) and 0 < value < 1):
        _refuse(attribute.name, "a number strictly between 0 and 1", value)


def finite_positive(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (_number(value) and math.isfinite(value) and value > 0):
        _refuse(attribute.name, "a finite number > 0", value)


def at_least(minimum: float) -> Callable[[object, attrs.Attribute[float], float], None]:
    """A finite number >= ``minimum``."""

    def check(_: object, attribute: attrs.Attribute[float], value: float) -> None:
        if not (_number(value) and math.isfinite(value) and value >= minimum):
            _refuse(attribute.name, f"a finite number >= {minimum}", value)

    return check


def integer(
    minimum: int, maximum: int | None = None
) -> Callable[[object, attrs.Attribute[int], int], None]:
    """A whole number (not a bool, not a float) in ``[minimum, maximum]``."""
    allowed = (
        f"an integer >= {minimum}" if maximum is None else f"an integer from {minimum} to {maximum}"
    )

    def check(_: object, attribute: attrs.Attribute[int], value: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{attribute.name} must be {allowed}, got {value!r}")
        if value < minimum or (maximum is not None and value > maximum):
            raise ValueError(f"{attribute.name} must be {allowed}, got {value!r}")

    return check


def boolean(_: object, attribute: attrs.Attribute[bool], value: bool) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{attribute.name} must be True or False, got {value!r}")


def member(enum: type[E], name: str, value: Any) -> E:
    """``value`` as a member of ``enum`` (the member or its value), or a ValueError naming the
    setting and listing the choices."""
    try:
        return enum(value)
    except ValueError:
        choices = ", ".join(repr(str(m)) for m in enum)
        raise ValueError(f"{name} must be one of {choices}, got {value!r}") from None


def statuses(value: Any) -> frozenset[int]:
    """``retry_statuses``: a collection of HTTP statuses (integers 100..599), never a string
    (which would be split into characters) nor a single number."""
    allowed = "a set of HTTP statuses such as {502, 503}"
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise TypeError(f"retry_statuses must be {allowed}, got {value!r}")
    held = frozenset(value)
    for status in held:
        if not isinstance(status, int) or isinstance(status, bool):
            raise TypeError(f"retry_statuses must be {allowed}: {status!r} is not an integer")
        if not 100 <= status <= 599:
            raise ValueError(f"retry_statuses must be {allowed}: {status!r} is not in 100..599")
    return held


def check_instance(name: str, value: object, kind: type, what: str) -> None:
    """Refuse ``value`` unless it is None or a ``kind`` (``what`` names it for the reader)."""
    if value is not None and not isinstance(value, kind):
        raise TypeError(f"{name} must be {what} or None, got {type(value).__name__}: {value!r}")


def callable_setting(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not callable(value):
        raise TypeError(f"{attribute.name} must be a function, got {value!r}")


def check_callable(name: str, value: object, what: str) -> None:
    """Refuse ``value`` unless it is None or callable."""
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be {what} or None, got {value!r}")


def check_protocol(
    name: str, value: object, methods: tuple[str, ...], what: str, *, optional: bool = True
) -> None:
    """Refuse ``value`` unless it has every method of ``methods`` (or is None, if optional)."""
    if value is None and optional:
        return
    missing = [m for m in methods if not callable(getattr(value, m, None))]
    if missing:
        none = " or None" if optional else ""
        raise TypeError(
            f"{name} must be {what}{none}: an object with {', '.join(methods)}; got "
            f"{type(value).__name__} (no {', '.join(missing)}): {value!r}"
        )
