"""The README's "With your agent framework" section, as the framework tests run it.

The tests execute the section's setup block and evaluate each framework's snippet from the
table, so what README shows is what runs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "## With your agent framework"
# The README's setup block imports the httpx2 flavour; an mcp 1.x framework takes the other.
MCP1_IMPORT = (
    "from mcp_safe_retry.httpx2 import mcp_client",
    "from mcp_safe_retry import mcp_client",
)


def section() -> str:
    """Return the section's text, up to the next second-level heading."""
    text = README.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start : end if end != -1 else len(text)]


def setup(url: str, *, mcp1: bool = False) -> dict[str, Any]:
    """Run the section's first python block with ``URL = url``; return its names."""
    (code,) = re.findall(r"```python\n(.*?)```", section(), re.DOTALL)[:1]
    if mcp1:
        code = code.replace(*MCP1_IMPORT)
    namespace: dict[str, Any] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    namespace["URL"] = url
    return namespace


def snippet(package: str) -> str:
    """Return the code in the table row whose first cell names `package` (e.g. "openai-agents")."""
    for line in section().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].split()[0] == package:
            codes = re.findall(r"`([^`]+)`", cells[2])
            if codes:
                return codes[0]
    raise LookupError(f"README's framework table has no snippet for {package}")


def build(package: str, names: dict[str, Any]) -> Any:
    """Evaluate `package`'s snippet with the setup's names and the framework's own."""
    return eval(compile(snippet(package), "README.md", "eval"), names)
