"""Validators of setting values (attrs validators), shared by the policy and hedge settings:
each raises a ValueError naming the setting and the value refused."""

from __future__ import annotations

import math

import attrs

__all__ = ["finite_positive", "fraction", "non_negative", "positive_or_none"]


def non_negative(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
        raise ValueError(f"{attribute.name} must be a finite number >= 0, got {value!r}")


def positive_or_none(
    _: object, attribute: attrs.Attribute[float | None], value: float | None
) -> None:
    finite = isinstance(value, int | float) and math.isfinite(value)
    if value is not None and not (finite and value > 0):
        raise ValueError(f"{attribute.name} must be None or a finite number > 0, not {value!r}")


def fraction(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (isinstance(value, int | float) and 0 < value < 1):
        raise ValueError(
            f"{attribute.name} must be a number strictly between 0 and 1, got {value!r}"
        )


def finite_positive(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise ValueError(f"{attribute.name} must be a finite number > 0, got {value!r}")
