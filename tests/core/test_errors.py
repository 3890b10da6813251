"""The failures this library raises (core/errors.py): one class per failure, which each
flavour's own exception derives from, so one ``except`` catches both."""

from __future__ import annotations

import httpx
import httpx2
import pytest

import mcp_safe_retry
from mcp_safe_retry.core import errors
from mcp_safe_retry.shells import errors_httpx
from mcp_safe_retry.shells.generated import errors_httpx2


@pytest.mark.parametrize("name", ["BodyTooLarge", "CircuitOpenError", "DuplicateCallError"])
def test_one_class_per_failure_catches_both_flavours(name: str) -> None:
    base = getattr(errors, name)
    assert getattr(mcp_safe_retry, name) is base
    for flavour, library in ((errors_httpx, httpx), (errors_httpx2, httpx2)):
        made = getattr(flavour, name)("held", request=library.Request("POST", "http://h/"))
        with pytest.raises(base):
            raise made
        assert isinstance(made, library.TransportError)  # the SDKs still catch it


def test_an_oversized_body_is_a_read_error_of_each_library() -> None:
    assert issubclass(errors_httpx.BodyTooLarge, httpx.ReadError)
    assert issubclass(errors_httpx2.BodyTooLarge, httpx2.ReadError)
