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


def _port(text: str) -> int:
    """``--port``: a TCP port, 0 (a free one) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a port number 0..65535, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number 0..65535, got {port}")
    return port


def build_parser(prog: str = "python -m mcp_safe_retry.kitchen") -> argparse.ArgumentParser:
    """Return the command-line parser (``prog``: how the usage line names the command)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Serve the mcp-safe-retry fault-injection MCP server on 127.0.0.1.",
    )
    parser.add_argument("--port", type=_port, default=0, help="TCP port (default 0: a free one)")
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


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Run the kitchen until interrupted; return the exit status."""
    parser = build_parser(prog) if prog else build_parser()
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
    except OSError as exc:  # the port is taken, or not ours to take
        reason = exc.strerror or str(exc)
        print(f"kitchen: cannot listen on 127.0.0.1:{args.port}: {reason}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
