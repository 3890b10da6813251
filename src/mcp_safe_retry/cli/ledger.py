"""``mcp-safe-retry ledger list|resolve``: a person's review of a fleet's call ledger in Redis
(``mcp_safe_retry.redis.RedisCallLedger``): the UNSAFE tool calls it holds, and a verdict on
one of them (it ran, or it did not: then the same call may be sent again).

Exit status: 0 done; 1 no call (or more than one) matches what ``resolve`` was given; 2 a
bad command line (a URL that is not a Redis URL, redis-py missing); 3 Redis does not answer.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
import urllib.parse
from collections.abc import Sequence
from typing import Any

__all__ = ["main"]

_PROG = "mcp-safe-retry ledger"
_NEEDS_REDIS = "this command needs redis-py: pip install 'mcp-safe-retry[redis]'"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=_PROG,
        description="Review the UNSAFE tool calls a fleet's ledger in Redis holds "
        "(RedisCallLedger): in flight, may have run, ran unseen, ran.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    listing = commands.add_parser("list", help="the calls the ledger holds, oldest first")
    resolve = commands.add_parser("resolve", help="a person's verdict on one call")
    for command in (listing, resolve):
        command.add_argument("--redis", required=True, metavar="URL", help="redis://host:port/db")
        command.add_argument("--name", default="default", help="the ledger's name (default)")
        command.add_argument(
            "--timeout", type=float, default=2.0, help="seconds to wait for Redis (default 2)"
        )
    listing.add_argument("--json", action="store_true", help="print the calls as JSON")
    resolve.add_argument(
        "call", metavar="KEY_OR_DIGEST_PREFIX", help="its Redis key, or the start of its digest"
    )
    verdict = resolve.add_mutually_exclusive_group(required=True)
    verdict.add_argument(
        "--ran", action="store_true", help="it ran: held for the rest of its window"
    )
    verdict.add_argument(
        "--did-not-run",
        action="store_true",
        help="it did not run: forgotten, the same call may be sent again",
    )
    return parser


def _shown(url: str) -> str:
    """The URL without its password, for a message."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def _fail(message: str, status: int) -> int:
    print(f"{_PROG}: {message}", file=sys.stderr)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``mcp-safe-retry ledger``; return the exit status."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if not args.timeout > 0:
        return _fail(f"--timeout must be a number of seconds > 0, got {args.timeout}", 2)
    try:
        import redis

        from ..shared import ledger_store as store
        from ..shared.link import connect
    except ImportError:
        return _fail(_NEEDS_REDIS, 2)
    try:
        client = connect(args.redis, args.timeout)
    except ValueError as error:
        return _fail(f"{_shown(args.redis)} is not a Redis URL: {error}", 2)
    try:
        with client:
            calls = store.entries(client, args.name)
            if args.command == "list":
                return _list(calls, args.name, as_json=args.json)
            return _resolve(client, calls, args.name, args.call, ran=args.ran)
    except (redis.RedisError, OSError) as error:
        why = f"{type(error).__name__}: {str(error)[:120]}"
        return _fail(f"Redis at {_shown(args.redis)} does not answer ({why})", 3)


def _when(started_at: float, now: float) -> str:
    when = datetime.datetime.fromtimestamp(started_at).strftime("%Y-%m-%d %H:%M:%S")
    age = max(0, round(now - started_at))
    ago = (
        f"{age // 3600}h{age % 3600 // 60:02d}m" if age >= 3600 else f"{age // 60}m{age % 60:02d}s"
    )
    return f"{when} ({ago} ago)"


def _ended(call: Any) -> str:
    if call.state == "in_flight" and not call.detail:
        return "no answer yet"
    ended = call.outcome or "?"
    if call.error_kind:
        ended += f" ({call.error_kind})"
    if call.detail:
        ended += f": {call.detail}"
    return ended if len(ended) <= 60 else ended[:59] + "…"


def _list(calls: list[Any], name: str, *, as_json: bool) -> int:
    if as_json:
        rows = [
            {"key": s.key, "server": s.server, "digest": s.digest, **s.call.to_dict()}
            | {"expiresIn": round(s.expires_in, 3)}
            for s in calls
        ]
        print(json.dumps(rows, indent=2))
        return 0
    in_doubt = sum(s.call.state != "ran" for s in calls)
    print(f"ledger {name!r}: {len(calls)} call(s) held, {in_doubt} in doubt")
    if not calls:
        return 0
    now = time.time()
    header = ("SERVER", "TOOL", "DIGEST", "REQUEST ID", "STATE", "SENT", "HOW IT ENDED", "HELD")
    table = [header] + [
        (
            s.server,
            s.call.tool or "?",
            s.digest[:12],
            json.dumps(s.call.request_id),
            str(s.call.state),
            _when(s.call.started_at, now),
            _ended(s.call),
            f"{s.expires_in:.0f} s",
        )
        for s in calls
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return 0


def _resolve(client: Any, calls: list[Any], name: str, given: str, *, ran: bool) -> int:
    from ..shared import ledger_store as store

    matches = [
        s
        for s in calls
        if given in (s.key, s.key.rsplit(":", 1)[-1]) or (given and s.digest.startswith(given))
    ]
    if not matches:
        return _fail(f"no call in ledger {name!r} matches {given!r} (see: {_PROG} list)", 1)
    if len(matches) > 1:
        shown = ", ".join(s.digest[:16] for s in matches[:5])
        return _fail(f"{given!r} matches {len(matches)} calls ({shown}): give more of it", 1)
    (stored,) = matches
    if not store.resolve(client, stored.key, ran=ran):
        return _fail(f"the call {stored.digest[:12]} is no longer held (its window ended)", 1)
    what = f"{stored.server} {stored.call.tool or '?'} {stored.digest[:12]}"
    if ran:
        print(f"{what}: ran; held for the rest of its window ({stored.expires_in:.0f} s)")
    else:
        print(f"{what}: did not run; forgotten, the same call may be sent again")
    return 0
