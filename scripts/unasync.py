"""Generate the sync and httpx2 twins of the hand-written shells.

Each hand-written module of ``shells/`` listed in ``SOURCES`` is mapped into
``shells/generated/`` by the rules of its targets. A rule that no longer matches anything
in its source fails the run (naming the rule): a stale rule would silently generate a wrong
twin.

python scripts/unasync.py          # write the generated files
python scripts/unasync.py --check  # exit 1 if any generated file is out of date
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "mcp_safe_retry"
SHELLS = PACKAGE / "shells"
GENERATED = SHELLS / "generated"

Rule = tuple[str, str]

# Async to sync: whole words, applied in order.
UNASYNC: Sequence[Rule] = (
    ('["AsyncRetryTransport", "mcp_client"]', '["RetryTransport", "mcp_client"]'),
    ("from ..race_httpx_async import race\n", "from ..wiring import no_race as race\n"),
    ("from ..legacy_httpx_async import watched\n", "from ..wiring import unwatched as watched\n"),
    ("import anyio  # the session lock, and a shielded close\n", "import threading\n"),
    (  # a response closed in a cancelled task: a sync shell is never cancelled
        ', shielded from a cancellation."""\n    if response is not None:\n'
        "        with anyio.CancelScope(shield=True):\n            await response.aclose()\n",
        '."""\n    if response is not None:\n        response.close()\n',
    ),
    ("import anyio\n", "import time\n"),  # anyio.sleep: time.sleep
    ("Awaitable[None]", "None"),
    ("Awaitable, ", ""),
    ("AsyncRetryTransport", "RetryTransport"),
    ("AsyncBaseTransport", "BaseTransport"),
    ("AsyncHTTPTransport", "HTTPTransport"),
    ("AsyncByteStream", "SyncByteStream"),
    ("AsyncGenerator", "Generator"),
    ("AsyncIterator", "Iterator"),
    ("AsyncClient", "Client"),
    ("handle_async_request", "handle_request"),
    ("__aenter__", "__enter__"),
    ("__aexit__", "__exit__"),
    ("__aiter__", "__iter__"),
    ("__anext__", "__next__"),
    ("StopAsyncIteration", "StopIteration"),
    ("aiter_bytes", "iter_bytes"),
    ("aclose", "close"),
    ("aflush_shared", "flush_shared"),
    ("aread", "read"),
    ("allow_async", "allow"),
    ("anyio.sleep", "time.sleep"),
    ("anyio.Lock", "threading.Lock"),
    ("awaited with", "called with"),
    ("The async httpx shell", "The sync httpx shell"),
    ("executor of the async httpx shell", "executor of the sync httpx shell"),
    ("from ..bodies_httpx_async import", "from .bodies_httpx_sync import"),
    ("await ", ""),
    ("async def ", "def "),
    ("async for ", "for "),
)

# httpx to httpx2: the library, and the generated modules made for it.
HTTPX2: Sequence[Rule] = (
    ("import httpx\n", "import httpx2 as httpx\n"),
    ("from httpx._utils import", "from httpx2._utils import"),
    ("CONTAIN_HTTP_ERRORS = True", "CONTAIN_HTTP_ERRORS = False"),
    ("httpx shell", "httpx2 shell"),
    ("from ..errors_httpx import", "from .errors_httpx2 import"),
    ("from ..bodies_httpx_async import", "from .bodies_httpx2_async import"),
    ("from ..race_httpx_async import", "from .race_httpx2_async import"),
    ("from ..legacy_httpx_async import", "from .legacy_httpx2_async import"),
    ("from .bodies_httpx_sync import", "from .bodies_httpx2_sync import"),
    ("take from httpx beyond", "take from httpx2 beyond"),
    ("for an httpx exception", "for an httpx2 exception"),
)

# Relative imports as seen from ``shells/generated/`` instead of ``shells/``.
DOWN: Sequence[Rule] = (("from .", "from .."),)

TABLES = {"UNASYNC": UNASYNC, "HTTPX2": HTTPX2, "DOWN": DOWN}

# Each hand-written module of shells/ -> its twins in shells/generated/: the file, what it
# is, and the tables of rules that make it, in order.
SYNC, ASYNC2, SYNC2 = ("DOWN", "UNASYNC"), ("DOWN", "HTTPX2"), ("DOWN", "UNASYNC", "HTTPX2")
SOURCES: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {
    "httpx_async.py": [
        ("httpx_sync.py", "sync, httpx", SYNC),
        ("httpx2_async.py", "async, httpx2", ASYNC2),
        ("httpx2_sync.py", "sync, httpx2", SYNC2),
    ],
    "bodies_httpx_async.py": [
        ("bodies_httpx_sync.py", "sync, httpx", SYNC),
        ("bodies_httpx2_async.py", "async, httpx2", ASYNC2),
        ("bodies_httpx2_sync.py", "sync, httpx2", SYNC2),
    ],
    "errors_httpx.py": [("errors_httpx2.py", "httpx2", ASYNC2)],
    # Hedged reads race copies in async shells only: sync shells refuse them (wiring.hedges).
    "race_httpx_async.py": [("race_httpx2_async.py", "async, httpx2", ASYNC2)],
    # HTTP+SSE event streams take events in async shells only (no MCP client is sync).
    "legacy_httpx_async.py": [("legacy_httpx2_async.py", "async, httpx2", ASYNC2)],
}


class StaleRule(Exception):
    """A substitution rule matched nothing: the generator and its sources disagree."""


def substitute(text: str, rules: Sequence[Rule], used: set[Rule] | None = None) -> str:
    """Apply ``rules`` in order, each bounded by non-word characters where its ends are word
    characters; add those that matched to ``used``."""
    for old, new in rules:
        start = r"(?<!\w)" if old[0].isalnum() or old[0] == "_" else ""
        end = r"\b" if old[-1].isalnum() or old[-1] == "_" else ""
        text, count = re.subn(rf"{start}{re.escape(old)}{end}", new.replace("\\", r"\\"), text)
        if count and used is not None:
            used.add((old, new))
    return text


def header(text: str, source: str, name: str) -> str:
    note = f'"""GENERATED by scripts/unasync.py from shells/{source}: do not edit ({name}).\n\n'
    return text.replace('"""', note, 1)


def formatted(text: str, path: Path) -> str:
    """The text with its imports sorted and as ``ruff format`` leaves it, so generated files
    pass the lint and format checks."""
    for command in (("check", "--select", "I", "--fix", "--quiet"), ("format",)):
        text = subprocess.run(
            [sys.executable, "-m", "ruff", *command, "--stdin-filename", str(path), "-"],
            input=text,
            capture_output=True,
            text=True,
            check=True,
            cwd=PACKAGE.parent.parent,
        ).stdout
    return text


def generated() -> dict[Path, str]:
    """Every generated file's text.

    Raises:
        StaleRule: a rule matched in none of the sources it was applied to.
    """
    used: set[Rule] = set()
    texts = {}
    for source, targets in SOURCES.items():
        text = (SHELLS / source).read_text()
        for name, what, tables in targets:
            out = text
            for table in tables:
                out = substitute(out, TABLES[table], used)
            path = GENERATED / name
            texts[path] = formatted(header(out, source, what), path)
    for table, rules in TABLES.items():
        for rule in rules:
            if rule not in used:
                raise StaleRule(f"{table} rule {rule[0]!r} -> {rule[1]!r} matched nothing")
    return texts


def main(argv: list[str]) -> int:
    try:
        files = generated()
    except StaleRule as exc:
        print(f"unasync: {exc}", file=sys.stderr)
        return 2
    stale = [path for path, text in files.items() if not path.exists() or path.read_text() != text]
    if "--check" in argv:
        for path in stale:
            print(f"out of date: {path.name} (run python scripts/unasync.py)")
        return 1 if stale else 0
    for path, text in files.items():
        path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
