"""What the gateway forwards: its upstream's origin, the upstream's own path, and the paths
the upstream points clients at (a redirect's ``Location``, a legacy HTTP+SSE ``endpoint``
event), which it points back at the gateway on the way."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from urllib.parse import urljoin, urlsplit

__all__ = ["Origin", "Paths", "pointed_back"]

_KEPT = 64  # paths the upstream named (legacy endpoints, redirects), at most
_FIRST_EVENT_BYTES = 64 * 1024  # how much of a GET stream is read for its endpoint event

logger = logging.getLogger("mcp_safe_retry.gateway")


class Origin:
    """The upstream's origin (scheme, host, port), and whether a URL is of it.

    Args:
        url: the upstream's URL.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.key = _origin(url)

    def owns(self, url: str) -> bool:
        """Whether ``url`` (absolute) is of the upstream's origin."""
        return _origin(url) == self.key


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = -1  # an invalid port is of no origin
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme)


def pointed_back(origin: Origin, base: str, location: str) -> str | None:
    """Where the client is sent when the upstream points it at ``location`` (a redirect's
    ``Location``, a legacy ``endpoint`` event), resolved against ``base`` (the URL the
    upstream answered): the same path and query on the gateway, written relative to the
    gateway's origin; None when ``location`` is of another origin (refused)."""
    target = urljoin(base, location.strip())
    if not origin.owns(target):
        return None
    parts = urlsplit(target)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


class Paths:
    """The paths forwarded to the upstream at ``url``: its own, then those it pointed
    clients at (the newest ``_KEPT``).

    Args:
        url: the upstream's URL.
    """

    def __init__(self, url: str) -> None:
        self.origin = Origin(url)
        self.upstream = urlsplit(url).path or "/"
        self._paths: dict[str, None] = {self.upstream: None}  # an insertion-ordered set

    def __contains__(self, path: object) -> bool:
        return path in self._paths

    def names(self) -> tuple[str, ...]:
        return tuple(self._paths)

    def location(self, base: str, location: str) -> str | None:
        """A redirect's ``Location`` pointed back at the gateway (None: another origin)."""
        back = pointed_back(self.origin, base, location)
        if back is not None:
            self._learn(back)
        return back

    async def endpoint_pointed_back(
        self, chunks: AsyncIterator[bytes], base: str
    ) -> AsyncIterator[bytes]:
        """A GET event stream as it comes, its first event held until whole: a legacy
        ``endpoint`` event is pointed back at the gateway (same path), or, naming another
        origin, ends the stream."""
        held: bytes | None = b""
        async for chunk in chunks:
            if held is None:
                yield chunk
                continue
            held += chunk
            end = _event_end(held)
            if end is None and len(held) < _FIRST_EVENT_BYTES:
                continue
            first, rest = (held, b"") if end is None else (held[:end], held[end:])
            held = None
            pointed = self._endpoint(first, base)
            if pointed is None:
                logger.warning("the upstream's endpoint event names another origin: refused")
                return
            yield pointed + rest
        if held:
            yield held

    def _endpoint(self, event: bytes, base: str) -> bytes | None:
        """``event`` as the client gets it: an ``endpoint`` event pointed back at the
        gateway (None when it names another origin); any other event as it was."""
        fields: dict[str, str] = {}
        for line in event.decode("utf-8", "replace").splitlines():
            name, _, value = line.partition(":")
            fields[name] = fields.get(name, "") + value.removeprefix(" ")
        if fields.get("event") != "endpoint" or "data" not in fields:
            return event
        back = pointed_back(self.origin, base, fields["data"])
        if back is None:
            return None
        self._learn(back)
        return f"event: endpoint\r\ndata: {back}\r\n\r\n".encode()

    def _learn(self, target: str) -> None:
        """Forward the path of ``target`` from now on: the upstream named it."""
        self._paths[target.partition("?")[0]] = None
        while len(self._paths) > _KEPT:
            del self._paths[next(p for p in self._paths if p != self.upstream)]


def _event_end(data: bytes) -> int | None:
    """Where the first SSE event of ``data`` ends (after its blank line), if it does."""
    ends = [i + len(sep) for sep in (b"\r\n\r\n", b"\n\n", b"\r\r") if (i := data.find(sep)) >= 0]
    return min(ends) if ends else None
