"""How big the hand-written source may grow, read from the source (ast; nothing imported).

No hand-written module over 400 lines and no class over 300 (issue 21): a part that grows
past that is two parts. The generated shells are not counted (their source is). The known
exceptions are listed with their size today; the list only shrinks, and a size only falls.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
SHELLS = SRC / "mcp_safe_retry" / "shells"
MODULE_LINES = 400
CLASS_LINES = 300

# Known, with the size they may not pass; the list only shrinks.
_KNOWN_MODULES = {
    "mcp_safe_retry/core/hedge_rules.py": 451,
    "mcp_safe_retry/cli/demo.py": 402,
    "mcp_safe_retry_kitchen/_layer.py": 416,
    "mcp_safe_retry_kitchen/_scenarios.py": 519,
}
_KNOWN_CLASSES = {"mcp_safe_retry/shared/breaker.py:RedisCircuitBreaker": 307}
# The hand-written async shell, its bodies and its race together (issue 21's target: < 846).
_SHELL_FILES = ("httpx_async.py", "bodies_httpx_async.py", "race_httpx_async.py")
_SHELL_LINES = 841  # 931 after one executor; its gates for a race's copies, one Answer (-90)


def _hand_written() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "generated" not in p.parts)


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_is_too_long() -> None:
    too_long = {}
    for path in _hand_written():
        name = path.relative_to(SRC).as_posix()
        lines = _lines(path)
        if lines > _KNOWN_MODULES.get(name, MODULE_LINES):
            too_long[name] = lines
    assert too_long == {}


def test_no_class_is_too_long() -> None:
    too_long = {}
    for path in _hand_written():
        name = path.relative_to(SRC).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                key = f"{name}:{node.name}"
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > _KNOWN_CLASSES.get(key, CLASS_LINES):
                    too_long[key] = lines
    assert too_long == {}


def test_the_async_shell_does_not_grow() -> None:
    assert sum(_lines(SHELLS / name) for name in _SHELL_FILES) <= _SHELL_LINES

