"""How a shell is wired to its HTTP library, pure and shared by every flavour (httpx and
httpx2, sync and async): the headers a shell reads in one pass (a response's head, as the
call reads it) and those it edits, the checks that refuse an
inner transport, a client or a setting of the wrong library or mode with a message naming
the class to use, ``mcp_client``'s keyword options sorted by whom they are for, and whether
a shell can hedge."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from operator import itemgetter, methodcaller
from typing import Any, NoReturn, Protocol, TypeVar

from ..core.commands import HeaderEdits
from ..core.events import Head
from ..core.headers import media_type
from ..core.listings import ListingCache
from ..core.policy import RetryPolicy

T = TypeVar("T")
R = TypeVar("R")

__all__ = [
    "EntryGuard",
    "check_inner",
    "check_settings",
    "edited",
    "head_of",
    "header_values",
    "is_jsonrpc_post",
    "routes",
    "split_options",
    "strip_headers",
    "wrong_client",
]

LISTINGS = ListingCache()
"""The process's last good answers of list reads (core/listings.py): every client
``mcp_client`` builds shares it (a framework builds one per session, and the SDK's follow-up
read of a new session may find the listing an earlier one read)."""

REQUEST_HEADERS = {
    name: name.decode()
    for name in (
        b"content-type",
        b"mcp-session-id",
        b"mcp-protocol-version",
        b"last-event-id",
        b"authorization",  # a list read's authorization context (core/listings.py), hashed
    )
}
_HEAD = (b"content-type", b"retry-after", b"mcp-session-id", b"content-encoding", b"content-length")
RESPONSE_HEADERS = {name: name.decode() for name in _HEAD}  # what ``head_of`` reads


def header_values(headers: Any, names: Mapping[bytes, str]) -> dict[str, str]:
    """The named headers of an httpx or httpx2 ``Headers``, values decoded as latin-1.

    ``names`` maps each lower-case raw name to the name it is found under (``_table``
    says which of repeated headers counts).
    """
    table = _table(headers)
    present = table.keys() & names  # the names iterated, each looked up in the table
    values = map(_LATIN_1, map(table.__getitem__, present))
    return dict(zip(map(names.__getitem__, present), values))  # noqa: B905 - one set, one length


def _table(headers: Any) -> dict[bytes, bytes]:
    """An httpx or httpx2 ``Headers``' raw values by lower-case raw name.

    The first of repeated headers wins (``Headers.get`` would join them; none read here
    may be repeated). Every step runs in C, not in a loop of ours (a request carries ~10
    headers): httpx and httpx2 keep ``(raw name, lower-case name, value)`` triples in
    ``Headers._list``, read where a probe of the class finds that layout (no ``.lower()``
    per pair, no list built by ``Headers.raw``), else the public ``raw`` pairs are
    lower-cased here; reversed, so that the first of repeated names is written last.
    """
    if type(headers) in _LOWER_LIST or _keeps_lower_list(type(headers)):
        return dict(map(_KEY_AND_VALUE, reversed(headers._list)))
    return {key.lower(): value for key, value in reversed(headers.raw)}


_KEY_AND_VALUE = itemgetter(1, 2)
_LATIN_1 = methodcaller("decode", "latin-1")
_LOWER_LIST: set[type] = set()  # Headers classes probed: the lower-cased triples
_RAW_ONLY: set[type] = set()  # and those read through their public raw pairs
_new = tuple.__new__  # a named tuple from its values in order, without a keyword call


def _keeps_lower_list(kind: type) -> bool:
    """Whether headers of class ``kind`` keep their pairs as httpx 0.28 does (probed once:
    the class joins ``_LOWER_LIST`` or ``_RAW_ONLY``)."""
    if kind in _RAW_ONLY:
        return False
    try:
        probe = kind([(b"X-Probe", b"V"), (b"x-probe", b"w")])
        keeps = probe._list == [(b"X-Probe", b"x-probe", b"V"), (b"x-probe", b"x-probe", b"w")]
    except Exception:  # another layout, or another constructor: the public pairs
        keeps = False
    (_LOWER_LIST if keeps else _RAW_ONLY).add(kind)
    return bool(keeps)


def head_of(response: Any) -> Head:
    """The parts of an httpx or httpx2 response's head the call reads, values decoded as
    latin-1 (``header_values`` with ``RESPONSE_HEADERS``, in one step)."""
    content_type, retry_after, session, encoding, length = map(_table(response.headers).get, _HEAD)
    return _new(
        Head,
        (
            response.status_code,
            None if content_type is None else content_type.decode("latin-1"),
            None if retry_after is None else retry_after.decode("latin-1"),
            None if session is None else session.decode("latin-1"),
            encoding is not None,
            length is not None,
        ),
    )


@functools.lru_cache(maxsize=64)  # a client sends a few pairs: answered in C, no frame
def is_jsonrpc_post(method: str, content_type: str | None) -> bool:
    """Only JSON POSTs can carry a JSON-RPC message; everything else passes through."""
    return method == "POST" and media_type(content_type)[0] == "application/json"


def strip_headers(raw: Iterable[tuple[bytes, bytes]], *names: bytes) -> list[tuple[bytes, bytes]]:
    """Raw header pairs without the named ones (names in lower case)."""
    return [(k, val) for k, val in raw if k.lower() not in names]


def edited(raw: list[tuple[bytes, bytes]], edits: HeaderEdits) -> list[tuple[bytes, bytes]]:
    """Header pairs for another body (its length is its own), changed as ``edits`` say."""
    names = [name.encode() for name, _ in edits]
    headers = strip_headers(raw, b"content-length", b"transfer-encoding", *names)
    headers += [(name.encode(), value.encode()) for name, value in edits if value is not None]
    return headers


# -- mixing up the two HTTP libraries, or sync and async ---------------------------------

LIBRARIES = ("httpx", "httpx2")
_SHELLS = {
    ("httpx", False): "mcp_safe_retry.RetryTransport",
    ("httpx", True): "mcp_safe_retry.AsyncRetryTransport",
    ("httpx2", False): "mcp_safe_retry.httpx2.RetryTransport",
    ("httpx2", True): "mcp_safe_retry.httpx2.AsyncRetryTransport",
}
_BASES = {"BaseTransport": False, "AsyncBaseTransport": True}


_FACTORIES = {"httpx": "mcp_safe_retry.mcp_client", "httpx2": "mcp_safe_retry.httpx2.mcp_client"}
_SDKS = {"httpx": "mcp 1.x", "httpx2": "mcp 2.x, fastmcp"}


def _library(obj: object) -> str | None:
    """``"httpx"`` or ``"httpx2"`` for an object of either library's classes, or of a class
    derived from one (an ``Auth`` flow, a transport of the user's own)."""
    for cls in type(obj).__mro__:
        root = cls.__module__.partition(".")[0]
        if root in LIBRARIES:
            return root
    return None


def transport_kinds(obj: object) -> frozenset[tuple[str, bool]]:
    """``(library, is_async)`` for every transport base class ``obj`` derives from.

    Read from the class names, so httpx2 is never imported: a ``MockTransport`` is both
    sync and async; a class that derives from neither library's bases has no kinds.
    """
    kinds = set()
    for cls in type(obj).__mro__:
        library = cls.__module__.partition(".")[0]
        if library in LIBRARIES and cls.__name__ in _BASES:
            kinds.add((library, _BASES[cls.__name__]))
    return frozenset(kinds)


def _a_mode(is_async: bool) -> str:
    return "an async" if is_async else "a sync"


def _client(library: str, is_async: bool) -> str:
    return f"{library}.{'AsyncClient' if is_async else 'Client'}"


def shell_kind(shell: object) -> tuple[str, bool]:
    """``(library, is_async)`` of one of our retry transports (it has exactly one)."""
    (kind,) = transport_kinds(shell)
    return kind


def check_inner(inner: object, shell: object) -> None:
    """Refuse an inner transport that ``shell`` (a retry transport) cannot drive.

    An httpx transport under an httpx2 shell, or an async one under a sync shell, would
    fail only later, deep inside the HTTP library; this says at once which class fits.

    Raises:
        TypeError: naming the retry transport that can wrap ``inner``.
    """
    if inner is None:
        return
    library, is_async = shell_kind(shell)
    own = _SHELLS[(library, is_async)]
    kinds = transport_kinds(inner)
    name = f"{type(inner).__module__.partition('.')[0]}.{type(inner).__qualname__}"
    if not kinds:
        if hasattr(inner, "handle_async_request" if is_async else "handle_request"):
            return  # a transport by duck typing: nothing tells its library
        if hasattr(inner, "handle_request" if is_async else "handle_async_request"):
            raise TypeError(
                f"{own} cannot wrap {name}, {_a_mode(not is_async)} transport; use "
                f"{_SHELLS[(library, not is_async)]} (with an {_client(library, not is_async)})"
            )
        raise TypeError(f"{own} needs an {library} transport to wrap, not {name}")
    if (library, is_async) in kinds:
        return
    inner_library, inner_async = min(kinds, key=lambda kind: kind[0] != library)
    raise TypeError(
        f"{own} cannot wrap {name}, {_a_mode(inner_async)} {inner_library} transport; "
        f"use {_SHELLS[(inner_library, inner_async)]} "
        f"(with an {_client(inner_library, inner_async)})"
    )


def wrong_client(
    shell: object, request: object, *, client_is_async: bool | None = None
) -> TypeError:
    """The error for a client of the wrong library or mode calling ``shell``.

    Args:
        shell: the retry transport that was called.
        request: the request the client passed (its class tells the client's library).
        client_is_async: whether the client called ``handle_async_request``; None: the
            client called the shell's own entry point (then only the library is wrong).
    """
    kind = shell_kind(shell)
    own = _SHELLS[kind]
    if client_is_async is None:
        client_is_async = kind[1]
    library = _library(request)
    if library is None:
        return TypeError(f"{own} got a {type(request).__qualname__}, not an httpx request")
    client = _client(library, client_is_async)
    return TypeError(
        f"{own} cannot serve an {client}: use {_SHELLS[(library, client_is_async)]} "
        f"as the transport of an {client}"
    )


def check_settings(library: str, settings: Mapping[str, object]) -> None:
    """Refuse a setting of the other HTTP library given to ``mcp_client`` of ``library``.

    A timeout, auth, limits, proxy, transport, mount or client of httpx given to the httpx2
    client (or the reverse), as a framework built for the other SDK passes them, would fail
    only at the first request, deep inside the library; this says at once which to use.

    Args:
        library: the library of the ``mcp_client`` called (``"httpx"`` or ``"httpx2"``).
        settings: its keyword arguments (the values of ``mounts`` are judged one by one).

    Raises:
        TypeError: naming the ``mcp_client`` of the setting's library.
    """
    for name, value in settings.items():
        values = value.values() if name == "mounts" and isinstance(value, Mapping) else [value]
        for item in values:
            other = _library(item)
            if other is not None and other != library:
                given = f"{type(item).__module__.partition('.')[0]}.{type(item).__qualname__}"
                raise TypeError(
                    f"{_FACTORIES[library]} got {name}={given}, "
                    f"of {other} ({_SDKS[other]}): use {_FACTORIES[other]}, or give it "
                    f"{library} settings"
                )


class EntryGuard:
    """A base of every shell: the entry point of the other mode (a sync client calling an
    async transport, or the reverse) raises a TypeError naming the class to use. Each shell
    defines its own mode's entry point and closing, which take precedence."""

    def handle_request(self, request: Any) -> Any:
        raise wrong_client(self, request, client_is_async=False)

    async def handle_async_request(self, request: Any) -> Any:
        raise wrong_client(self, request, client_is_async=True)

    # The wrong client still closes the transport at its end: let it, so the TypeError
    # above stays the error the user sees. Its requests were refused, so nothing is open.
    def close(self) -> None:
        return None

    async def aclose(self) -> None:
        self.close()


# -- mcp_client's keyword options ---------------------------------------------------------


def split_options(
    options: Mapping[str, Any], client: Callable[..., Any], pool: Callable[..., Any]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Sort keyword options given to ``mcp_client`` by whom they are for.

    The MCP SDKs and fastmcp call a client factory with the client's own keywords
    (``follow_redirects``, ...); users add connection settings (``verify``, ``limits``,
    ...) and retry transport options (``history``, ``hooks``, ...).

    Args:
        options: the keyword options.
        client: the client class (its parameters go to the client).
        pool: the connection pool transport class (its parameters configure the inner
            transport; one that both take, such as ``proxy``, goes to the pool, so that
            every request still passes through the retry transport).

    Returns:
        ``(client options, pool options, retry transport options)``.
    """
    pool_names = inspect.signature(pool).parameters
    client_names = inspect.signature(client).parameters
    sorted_options: tuple[dict[str, Any], dict[str, Any], dict[str, Any]] = ({}, {}, {})
    for name, value in options.items():
        if name in pool_names:
            sorted_options[1][name] = value
        elif name in client_names and name != "transport":
            sorted_options[0][name] = value
        else:
            sorted_options[2][name] = value
    return sorted_options


def routes(
    proxies: Mapping[str, str | None],
    mounts: Mapping[str, T | None],
    over: Callable[[T], R],
    proxied: Callable[[str], T],
) -> dict[str, R | None]:
    """The routes ``mcp_client``'s client takes by itself, each with the retry layer above
    it (``over``): the environment's ``proxies`` (URL pattern -> proxy URL, each reached
    through the transport ``proxied`` makes for it), then the ``mounts`` given (URL pattern ->
    inner transport). None: the pattern has no route of its own (no proxy)."""
    table = {
        pattern: None if proxy is None else over(proxied(proxy))
        for pattern, proxy in proxies.items()
    }
    table.update(
        {pattern: None if inner is None else over(inner) for pattern, inner in mounts.items()}
    )
    return table


_Q_contra = TypeVar("_Q_contra", contravariant=True)
_A_co = TypeVar("_A_co", covariant=True)


class _Sends(Protocol[_Q_contra, _A_co]):
    def handle_request(self, request: _Q_contra) -> _A_co: ...


def unwatched(_engine: object, request: _Q_contra, inner: _Sends[_Q_contra, _A_co]) -> _A_co:
    """What a sync shell does with a request that is no call: send it, hand its answer on as
    it came (no MCP client is sync, so none reads an HTTP+SSE event stream through one; see
    ``legacy_httpx_async``)."""
    return inner.handle_request(request)


def no_race(*_: object, **__: object) -> NoReturn:
    """What a sync shell has instead of a race of hedged copies: none (see ``hedges``)."""
    raise AssertionError("a sync transport never races hedged copies")


def hedges(policy: RetryPolicy, racer: object) -> bool:
    """Whether a shell hedges reads: its policy asks for it, and it can race copies.

    Raises:
        ValueError: the policy hedges and the shell is sync: a copy blocked in a read in
            another thread cannot be cancelled, so hedges would pile up instead of stopping.
    """
    if policy.hedge_after is None:
        return False
    if racer is no_race:
        raise ValueError(
            "hedged reads (RetryPolicy.hedge_after) need an async transport: a sync one "
            "cannot cancel a losing copy blocked in a read; use AsyncRetryTransport (or "
            "mcp_client), or a policy without hedge_after"
        )
    return True
