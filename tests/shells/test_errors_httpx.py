"""The HTTP library's side of failures (shells/errors_httpx.py and its httpx2 twin): the kind
of each library error, its scrubbed detail, and the exception a refused call raises."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import pytest

from mcp_safe_retry.core.attempt_kinds import ErrorKind
from mcp_safe_retry.core.commands import Refuse
from mcp_safe_retry.records import Outcome

FLAVOURS = [
    pytest.param(("httpx", "mcp_safe_retry.shells.errors_httpx"), id="httpx"),
    pytest.param(("httpx2", "mcp_safe_retry.shells.generated.errors_httpx2"), id="httpx2"),
]


@pytest.fixture(params=FLAVOURS)
def flavour(request: pytest.FixtureRequest) -> tuple[Any, ModuleType]:
    library, errors = request.param
    return importlib.import_module(library), importlib.import_module(errors)


KINDS = [
    ("ConnectError", ErrorKind.CONNECT),
    ("ConnectTimeout", ErrorKind.CONNECT),
    ("PoolTimeout", ErrorKind.POOL),
    ("ReadTimeout", ErrorKind.TIMEOUT),
    ("WriteTimeout", ErrorKind.TIMEOUT),
    ("ReadError", ErrorKind.READ),
    ("WriteError", ErrorKind.WRITE),
    ("CloseError", ErrorKind.READ),
    ("RemoteProtocolError", ErrorKind.PROTOCOL),
    ("LocalProtocolError", ErrorKind.LOCAL),
    ("UnsupportedProtocol", ErrorKind.LOCAL),
    ("ProxyError", ErrorKind.LOCAL),
    ("NetworkError", ErrorKind.NETWORK),
    ("DecodingError", ErrorKind.DECODING),
]


@pytest.mark.parametrize(("name", "kind"), KINDS)
def test_each_library_error_has_its_kind(
    flavour: tuple[Any, ModuleType], name: str, kind: ErrorKind
) -> None:
    library, errors = flavour
    assert errors.describe_error(getattr(library, name)("boom"))[0] is kind


def test_a_body_too_large_is_oversized_and_anything_else_a_network_error(
    flavour: tuple[Any, ModuleType],
) -> None:
    _, errors = flavour
    assert errors.describe_error(errors.BodyTooLarge("big")) == (
        ErrorKind.OVERSIZED,
        "BodyTooLarge: big",
    )
    assert errors.describe_error(OSError("odd"))[0] is ErrorKind.NETWORK


def test_the_detail_is_scrubbed_of_credentials(flavour: tuple[Any, ModuleType]) -> None:
    library, errors = flavour
    error = library.ConnectError("failed for http://user:hunter2@host/mcp")
    _, detail = errors.describe_error(error)
    assert "hunter2" not in detail and detail.startswith("ConnectError: ")


def test_a_refusal_raises_the_library_s_exception_for_its_outcome(
    flavour: tuple[Any, ModuleType],
) -> None:
    library, errors = flavour
    request = library.Request("POST", "http://h/mcp")
    held = errors.refusal(Refuse("circuit open for http://h/mcp"), request)
    assert type(held) is errors.CircuitOpenError and isinstance(held, library.TransportError)
    assert str(held) == "circuit open for http://h/mcp" and held.request is request
    duplicate = errors.refusal(Refuse("not sent", Outcome.DUPLICATE_HELD), request)
    assert type(duplicate) is errors.DuplicateCallError
