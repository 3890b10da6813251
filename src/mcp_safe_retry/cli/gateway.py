"""``mcp-safe-retry gateway --upstream URL``: serve the gateway under uvicorn.

The first line on stdout is the URL it serves (as the kitchen's is), so a parent process or
a person can point a client at it. It binds 127.0.0.1 unless told otherwise; any other
address needs ``--allow-remote`` and at least one ``--client-token``.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import socket
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ..core.hooks import Hook
from ..gateway import DEFAULT_MAX_BODY_BYTES, Gateway
from ..gateway._config import ConfigError, policy_from

__all__ = ["main"]

CLIENT_TOKEN_ENV = "MCP_SAFE_RETRY_GATEWAY_CLIENT_TOKEN"
UPSTREAM_TOKEN_ENV = "MCP_SAFE_RETRY_GATEWAY_UPSTREAM_TOKEN"

_NEEDS = {
    "uvicorn": "pip install 'mcp-safe-retry[gateway]'",
    "opentelemetry": "pip install 'mcp-safe-retry[otel]'",
    "redis": "pip install 'mcp-safe-retry[redis]'",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-safe-retry gateway",
        description="Serve one upstream MCP server through mcp-safe-retry, for any MCP client.",
    )
    add = parser.add_argument
    add("--upstream", required=True, metavar="URL", help="the upstream's MCP endpoint")
    add("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    add("--port", type=int, default=0, help="TCP port (default 0: a free one)")
    add("--allow-remote", action="store_true", help="allow a non-loopback --host")
    add(
        "--client-token",
        action="append",
        default=[],
        metavar="TOKEN",
        help=f"a token clients send in X-MCP-Gateway-Token (repeatable; or ${CLIENT_TOKEN_ENV})",
    )
    add(
        "--upstream-token",
        metavar="TOKEN",
        help=f"send 'Authorization: Bearer TOKEN' upstream instead of the client's "
        f"(or ${UPSTREAM_TOKEN_ENV})",
    )
    add(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="another Host header to serve (repeatable)",
    )
    add(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="another browser Origin to serve (repeatable)",
    )
    add(
        "--read",
        action="append",
        default=[],
        metavar="TOOL",
        help="a READ tool, safe to re-send (repeatable, fnmatch globs)",
    )
    add(
        "--idempotent",
        action="append",
        default=[],
        metavar="TOOL",
        help="a tool whose repeats have no further effect (repeatable, globs)",
    )
    add(
        "--trust-annotations",
        action="store_true",
        help="count tools whose listing says readOnlyHint as READ",
    )
    add("--config", metavar="FILE", help="a TOML file of RetryPolicy settings")
    add("--redis", metavar="URL", help="share the budget, breaker and call ledger in this Redis")
    add(
        "--fleet",
        default="gateway",
        metavar="NAME",
        help="the name the fleet's gateways share in Redis (default: gateway)",
    )
    add("--records", metavar="FILE", help="append one JSON line per call to FILE")
    add("--otel", action="store_true", help="spans and metrics to OpenTelemetry's providers")
    add("--metrics", action="store_true", help="serve GET /metrics (Prometheus text)")
    add(
        "--max-body",
        type=int,
        default=DEFAULT_MAX_BODY_BYTES,
        metavar="BYTES",
        help=f"largest request body forwarded (default {DEFAULT_MAX_BODY_BYTES})",
    )
    add("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return parser


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say they are TCP.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def _allowed_hosts(host: str, port: int, extra: Sequence[str]) -> list[str] | None:
    """The Host values served: the bound address's (loopback: its names too) and ``extra``;
    None (any) for a wildcard bind with none given (the client token guards it then)."""
    if host in ("0.0.0.0", "::", "") and not extra:
        return None
    names = {host, "127.0.0.1", "localhost", "[::1]"} if _is_loopback(host) else {host}
    names = {f"[{n}]" if ":" in n and not n.startswith("[") else n for n in names}
    return sorted({*names, *(f"{n}:{port}" for n in names), *extra})


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the gateway until SIGINT or SIGTERM; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    tokens = args.client_token or (
        [os.environ[CLIENT_TOKEN_ENV]] if CLIENT_TOKEN_ENV in os.environ else []
    )
    if any(not token for token in tokens):
        parser.error("a client token must not be empty")
    if not _is_loopback(args.host):
        if not args.allow_remote:
            parser.error(f"--host {args.host} is not a loopback address: add --allow-remote")
        if not tokens:
            parser.error("a non-loopback --host needs --client-token (clients must prove "
                         "themselves)")  # fmt: skip
    if not 0 <= args.port <= 65535:
        parser.error(f"--port {args.port} is not a TCP port")
    if args.max_body <= 0:
        parser.error("--max-body must be positive")
    try:
        policy = policy_from(
            args.config,
            read=args.read,
            idempotent=args.idempotent,
            trust_annotations=args.trust_annotations,
        )
    except ConfigError as exc:
        parser.error(str(exc))
    try:
        import uvicorn
    except ImportError:
        return _missing("uvicorn")
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    closers: list[Callable[[], Any]] = []
    try:
        hooks, metrics = _observers(args, closers)
        budget = breaker = ledger = None
        if args.redis:
            from ..redis import RedisBudget, RedisCallLedger, RedisCircuitBreaker

            budget = RedisBudget(args.redis, name=args.fleet)
            breaker = RedisCircuitBreaker(args.redis, name=args.fleet)
            ledger = RedisCallLedger(args.redis, name=args.fleet)
            closers += [budget.close, breaker.close, ledger.close]
    except ImportError as exc:
        return _missing(exc.name or "")
    try:
        sock = _bind(args.host, args.port)
    except OSError as exc:
        print(f"mcp-safe-retry gateway: cannot bind {args.host}:{args.port}: {exc.strerror}",
              file=sys.stderr)  # fmt: skip
        return 2
    port = sock.getsockname()[1]
    try:
        gateway = Gateway(
            args.upstream,
            policy=policy,
            hooks=hooks,
            budget=budget,
            breaker=breaker,
            ledger=ledger,
            upstream_token=args.upstream_token or os.environ.get(UPSTREAM_TOKEN_ENV),
            client_tokens=tokens,
            allowed_hosts=_allowed_hosts(args.host, port, args.allow_host),
            allowed_origins=args.allow_origin,
            max_body_bytes=args.max_body,
            metrics=metrics,
        )
    except ValueError as exc:
        sock.close()
        parser.error(str(exc))
    shown = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{shown}:{port}{gateway.paths[0]}"
    config = uvicorn.Config(
        gateway, http="h11", ws="none", lifespan="on", access_log=False,
        log_level=args.log_level, timeout_graceful_shutdown=5,
    )  # fmt: skip
    try:
        _serve(config, sock, lambda: print(url, flush=True))
    finally:
        sock.close()
        for close in closers:
            close()
    return 0


def _observers(
    args: argparse.Namespace, closers: list[Callable[[], Any]]
) -> tuple[list[Hook], Callable[[], bytes] | None]:
    """The hooks the flags ask for (JSON lines, OpenTelemetry) and ``/metrics``' source."""
    hooks: list[Hook] = []
    if args.records:
        from ..instrumentation.jsonlines import JsonLinesSink

        sink = JsonLinesSink(args.records)
        hooks.append(sink)
        closers.append(sink.close)
    metrics = None
    if args.otel or args.metrics:
        from ..instrumentation.otel import OpenTelemetryHook

        if args.metrics:  # metrics to /metrics; spans (and, without it, metrics) to the
            from ..gateway._metrics import PrometheusMetrics  # global providers

            metrics = PrometheusMetrics()
        hooks.append(
            OpenTelemetryHook(meter_provider=None if metrics is None else metrics.provider)
        )
    return hooks, metrics


def _missing(module: str) -> int:
    hint = _NEEDS.get(module.partition(".")[0], "")
    print(f"mcp-safe-retry gateway: {module} is not installed: {hint}", file=sys.stderr)
    return 2


def _serve(config: Any, sock: socket.socket, announce: Callable[[], None]) -> None:
    """Run uvicorn's server on ``sock``, announcing once it accepts connections."""
    import uvicorn

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                announce()

    Announcing(config).run(sockets=[sock])
