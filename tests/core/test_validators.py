"""The attrs validators settings share (core/validators.py): each refuses what it names, and
says which setting and what it got."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from mcp_safe_retry.core.validators import finite_positive, fraction, non_negative, positive_or_none


@attrs.frozen
class Settings:
    wait: float = attrs.field(default=0.0, validator=non_negative)
    limit: float | None = attrs.field(default=None, validator=positive_or_none)
    share: float = attrs.field(default=0.5, validator=fraction)
    window: float = attrs.field(default=1.0, validator=finite_positive)


def test_good_values_pass() -> None:
    assert Settings(wait=0, limit=2.5, share=0.99, window=1e-9) == Settings(0, 2.5, 0.99, 1e-9)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"wait": -1.0}, "wait must be a finite number >= 0, got -1.0"),
        ({"wait": float("inf")}, "wait must be a finite number >= 0"),
        ({"limit": 0}, "limit must be None or a finite number > 0, got 0"),
        ({"limit": float("nan")}, "limit must be None or a finite number > 0"),
        ({"share": 1}, "share must be a number strictly between 0 and 1, got 1"),
        ({"share": 0.0}, "share must be a number strictly between 0 and 1"),
        ({"window": 0}, "window must be a finite number > 0, got 0"),
        ({"window": float("inf")}, "window must be a finite number > 0"),
    ],
)
def test_bad_values_are_refused_by_name(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        Settings(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"wait": "1"}, "wait must be a finite number >= 0, got '1'", id="string"),
        pytest.param({"wait": True}, "wait must be a finite number >= 0, got True", id="bool"),
        pytest.param({"limit": []}, "limit must be None or a finite number > 0, got []", id="list"),
    ],
)
def test_values_of_the_wrong_type_are_type_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(TypeError) as raised:
        Settings(**kwargs)
    assert str(raised.value) == message
