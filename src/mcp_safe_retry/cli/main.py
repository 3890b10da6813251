"""The `mcp-safe-retry` command: demo, probe, kitchen and gateway."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["main"]

_NEEDS_MCP = (
    "this command needs the official MCP SDK and the kitchen: "
    "pip install 'mcp-safe-retry[mcp,kitchen]'"
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-safe-retry",
        description="MCP tool calls over HTTP that fail honestly and recover safely.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser(
        "demo", help="run the official MCP client through every fault scenario of the kitchen"
    )
    demo.add_argument("--json", action="store_true", help="print the records as JSON")

    probe = commands.add_parser("probe", help="call one tool on any server and show its history")
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
    probe.add_argument("--timeout", type=float, default=30.0, help="seconds (default 30)")
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
    return parser


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
    """Run the command line; return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["kitchen"]:  # its own parser, options passed on untouched
        try:
            from mcp_safe_retry.kitchen.__main__ import main as kitchen_main
        except ImportError:
            print(f"mcp-safe-retry: {_NEEDS_MCP}", file=sys.stderr)
            return 2
        return kitchen_main(argv[1:])
    if argv[:1] == ["gateway"]:  # its own parser too; it needs no MCP SDK
        from .gateway import main as gateway_main

        return gateway_main(argv[1:])
    parser = _parser()
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
    from .probe import probe

    arguments = _arguments(parser, args.args)
    headers = _headers(parser, args.header)
    result = anyio.run(
        lambda: probe(
            args.url,
            args.tool,
            arguments,
            read=args.read,
            headers=headers,
            timeout=args.timeout,
        )
    )
    print(json.dumps(result.as_json(), indent=2) if args.json else result.as_text())
    return 0 if result.error is None else 1


if __name__ == "__main__":
    sys.exit(main())
