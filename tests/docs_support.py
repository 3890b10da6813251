"""The Python blocks of README.md and of the documentation pages, as the tests run them.

Every ```python block is either run by the tests as written or marked as a fragment in its
fence (``python title="fragment: ..."``, which the site shows as the block's title). The
URLs the blocks use stand for servers the tests start: the kitchen the documentation says to
start (``mcp-safe-retry kitchen --port 8765``) and a Redis on its usual port.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
KITCHEN_URL = "http://127.0.0.1:8765/mcp"
REDIS_URL = "redis://127.0.0.1:6379/0"
# The official mcp 1.x client cannot share an environment with mcp 2.x: a block that uses it
# runs in tests/mcp1, in an environment of its own.
MCP1_MARK = "from mcp import ClientSession"

_FENCE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<code>.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


@attrs.frozen
class Block:
    """One fenced code block of a page."""

    path: Path
    line: int
    info: str
    code: str
    followed_by: str | None  # the text of a ```text block right after it: what it prints

    @property
    def is_python(self) -> bool:
        return self.info.split(" ", 1)[0] in {"python", "py"}

    @property
    def fragment(self) -> bool:
        return bool(re.search(r'title="fragment\b', self.info, re.IGNORECASE))

    @property
    def mcp1(self) -> bool:
        return MCP1_MARK in self.code

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    """README.md and every Markdown page of the site."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of ``path``, in order."""
    text = path.read_text(encoding="utf-8")
    matches = list(_FENCE.finditer(text))
    found = []
    for index, match in enumerate(matches):
        after = None
        if index + 1 < len(matches):
            nxt = matches[index + 1]
            between = text[match.end() : nxt.start()]
            if nxt.group("info").strip() == "text" and "```" not in between and len(between) < 200:
                after = nxt.group("code")
        found.append(
            Block(
                path=path,
                line=text.count("\n", 0, match.start()) + 1,
                info=match.group("info").strip(),
                code=match.group("code"),
                followed_by=after,
            )
        )
    return found


def python_blocks() -> list[Block]:
    """Every ```python block of README.md and the pages."""
    return [b for page in pages() for b in blocks(page) if b.is_python]


def readme_block(marker: str) -> Block:
    """README's python block that holds ``marker``."""
    (block,) = [b for b in blocks(README) if b.is_python and marker in b.code]
    return block
