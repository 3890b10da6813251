"""`python -m mcp_safe_retry.kitchen`: serve a kitchen on 127.0.0.1 and print its MCP URL.

The first stdout line is the URL, so a parent process (for instance a test running an
mcp 1.x client, which cannot import mcp 2.x) can start the kitchen and read where it is.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from mcp_safe_retry.kitchen._params import ScenarioError
from mcp_safe_retry.kitchen._scenarios import SCENARIO_NAMES
from mcp_safe_retry.kitchen._server import run_kitchen


def build_parser() -> argparse.ArgumentParser:
    """Return the command-line parser."""
    parser = argparse.ArgumentParser(
        prog="python -m mcp_safe_retry.kitchen",
        description="Serve the mcp-safe-retry fault-injection MCP server on 127.0.0.1.",
    )
    parser.add_argument("--port", type=int, default=0, help="TCP port (default 0: a free one)")
    parser.add_argument(
        "--scenario", default="baseline", help=f"default scenario, one of {list(SCENARIO_NAMES)}"
    )
    parser.add_argument("--params", default="{}", help="the default scenario's params as JSON")
    parser.add_argument("--stateless", action="store_true", help="no Mcp-Session-Id (stateless)")
    parser.add_argument("--json-response", action="store_true", help="JSON, not SSE, answers")
    parser.add_argument(
        "--legacy-only",
        action="store_true",
        help="refuse 2026-07-28 requests like an mcp 1.x server (clients fall back to 2025-11-25)",
    )
    parser.add_argument("--path", default="/mcp", help="MCP endpoint path (default /mcp)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the kitchen until interrupted; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        params = json.loads(args.params)
    except ValueError as exc:
        parser.error(f"--params is not valid JSON: {exc}")
    if not isinstance(params, dict):
        parser.error("--params must be a JSON object")
    try:
        run_kitchen(
            args.port,
            args.scenario,
            params,
            stateless=args.stateless,
            json_response=args.json_response,
            legacy_only=args.legacy_only,
            path=args.path,
        )
    except ScenarioError as exc:
        print(f"kitchen: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
