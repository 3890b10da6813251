"""The `mcp-safe-retry` command: demo, probe, kitchen, gateway and ledger."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from .. import __version__

__all__ = ["main"]

_NEEDS_MCP = (
    "this command needs the official MCP SDK and the kitchen: "
    "pip install 'mcp-safe-retry[mcp,kitchen]'"
)


def _seconds(text: str) -> float:
    """``--timeout``: a number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}")
    return value


def _parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The command's parser, and probe's own (whose usage its errors show)."""
    parser = argparse.ArgumentParser(
        prog="mcp-safe-retry",
        description="MCP tool calls over HTTP that fail honestly and recover safely.",
    )
    parser.add_argument("--version", action="version", version=f"mcp-safe-retry {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser(
        "demo", help="run the official MCP client through every fault scenario of the kitchen"
    )
    demo.add_argument("--json", action="store_true", help="print the records as JSON")

    probe = commands.add_parser(
        "probe", help="call one tool on any server and show its answer and its history"
    )
    probe.add_argument("url", help="the server's Streamable HTTP endpoint, e.g. http://host/mcp")
    probe.add_argument("--tool", required=True, help="the tool to call")
    probe.add_argument("--args", default="{}", help="the tool's arguments as a JSON object")
    probe.add_argument(
        "--read", action="store_true", help="declare the tool READ (safe to re-send)"
    )
    probe.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="an extra request header (repeatable), e.g. 'Authorization: Bearer ...'",
    )
    probe.add_argument(
        "--timeout",
        type=_seconds,
        default=30.0,
        help="seconds for the whole call: connecting, the handshake and the answer (default 30)",
    )
    probe.add_argument("--json", action="store_true", help="print the records as JSON")

    commands.add_parser(
        "kitchen",
        help="serve the fault-injection MCP server on 127.0.0.1 (see: mcp-safe-retry kitchen -h)",
    )
    commands.add_parser(
        "gateway",
        help="serve one upstream MCP server through mcp-safe-retry "
        "(see: mcp-safe-retry gateway -h)",
    )
    commands.add_parser(
        "ledger",
        help="review a fleet's call ledger in Redis: list the calls it holds, resolve one "
        "(see: mcp-safe-retry ledger -h)",
    )
    return parser, probe


def _arguments(parser: argparse.ArgumentParser, text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        parser.error(f"--args is not valid JSON: {exc}")
    if not isinstance(value, dict):
        parser.error("--args must be a JSON object")
    return value


def _headers(parser: argparse.ArgumentParser, items: list[str]) -> dict[str, str]:
    headers = {}
    for item in items:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            parser.error(f"--header {item!r} is not NAME:VALUE")
        headers[name.strip()] = value.strip()
    return headers


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (141 when the reader of our output
    went away, as a shell reports a pipe closed under a command)."""
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except BrokenPipeError:
        # `mcp-safe-retry demo | head -3`: the rest of the output has no reader. Nothing to
        # say, and nothing more may reach the closed pipe (not even at exit).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


def _main(argv: list[str]) -> int:
    if argv[:1] == ["kitchen"]:  # its own parser, options passed on untouched
        try:
            from ..kitchen.__main__ import main as kitchen_main
        except ImportError:
            print(f"mcp-safe-retry: {_NEEDS_MCP}", file=sys.stderr)
            return 2
        return kitchen_main(argv[1:], prog="mcp-safe-retry kitchen")
    if argv[:1] == ["gateway"]:  # its own parser too; it needs no MCP SDK
        from .gateway import main as gateway_main

        return gateway_main(argv[1:])
    if argv[:1] == ["ledger"]:  # its own parser too; it needs redis-py, not the MCP SDK
        from .ledger import main as ledger_main

        return ledger_main(argv[1:])
    parser, probe_parser = _parser()
    args = parser.parse_args(argv)
    try:
        import anyio
        import mcp  # noqa: F401 - only to fail early with a clear message
    except ImportError:
        print(f"mcp-safe-retry: {_NEEDS_MCP}", file=sys.stderr)
        return 2
    if args.command == "demo":
        from .demo import run_demo

        return anyio.run(lambda: run_demo(as_json=args.json))
    from .probe import probe, stderr_progress
    from .report import Paint

    arguments = _arguments(probe_parser, args.args)
    headers = _headers(probe_parser, args.header)
    progress = stderr_progress()
    result = anyio.run(
        lambda: probe(
            args.url,
            args.tool,
            arguments,
            read=args.read,
            headers=headers,
            timeout=args.timeout,
            progress=progress,
        )
    )
    if sys.stderr.isatty():
        print("\r\033[K", end="", file=sys.stderr, flush=True)  # the progress line, cleared
    if args.json:
        print(json.dumps(result.as_json(), indent=2))
    else:
        print(result.as_text(Paint.for_stream(sys.stdout)))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
