"""The package's import structure, read from the source (ast; nothing is imported).

No import circle anywhere under src/, ``TYPE_CHECKING`` imports included; and the core is
pure: nothing under ``core/`` imports instrumentation, a shell, the shared (Redis) parts, an
HTTP or async library, or any other library that does I/O.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
CORE = SRC / "mcp_safe_retry" / "core"

# Under core/: no package of ours that does I/O, no library that does.
_IMPURE_OURS = (
    "mcp_safe_retry.instrumentation",
    "mcp_safe_retry.shells",
    "mcp_safe_retry.shared",
    "mcp_safe_retry.cli",
    "mcp_safe_retry.redis",
    "mcp_safe_retry.otel",
    "mcp_safe_retry_kitchen",
)
_IMPURE_LIBRARIES = {
    "tenacity", "httpx", "httpx2", "httpcore", "anyio", "trio", "asyncio", "sniffio",
    "redis", "socket", "ssl", "select", "selectors", "subprocess", "urllib.request", "http",
    "requests", "aiohttp", "opentelemetry", "logging", "mcp", "fastmcp", "uvicorn",
    "starlette", "random", "secrets", "time", "os", "shutil", "tempfile", "pathlib",
}  # fmt: skip


# Known, each with its reason; the list only shrinks.
_KNOWN = {
    # A default clock for a breaker built by hand (a transport passes none of its own).
    "core/breaker.py": {"time"},
    # The token a pickled shared budget or breaker is known by across processes.
    "core/live.py": {"secrets"},
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, absolute, anywhere in the file (TYPE_CHECKING too)."""
    name = _module(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            found.add(stem)
            found.update(f"{stem}.{alias.name}" for alias in node.names)
    return found


def _graph() -> dict[str, set[str]]:
    """Module -> the modules of src/ it imports (a name imported from a package's
    ``__init__`` counts as an import of that package, as Python runs it)."""
    files = {_module(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        edges = set()
        for imported in _imports(path):
            target = imported
            while target and target not in files:
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _without_package_faces(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Drop the edges into a package's ``__init__`` from modules inside that package: a
    submodule importing its package's face is how Python loads it, not a design circle."""
    return {
        name: {t for t in edges if not name.startswith(t + ".")} for name, edges in graph.items()
    }


def test_no_import_circle_under_src() -> None:
    assert _cycles(_without_package_faces(_graph())) == []


def test_the_cycle_finder_finds_one() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_relative_imports_resolve(tmp_path: Path) -> None:
    graph = _graph()
    assert "mcp_safe_retry.core.events" in graph["mcp_safe_retry.core.call"]
    assert "mcp_safe_retry.core" not in graph["mcp_safe_retry.core.call"]


def test_the_core_imports_nothing_that_does_io() -> None:
    offences = []
    for path in sorted(CORE.rglob("*.py")):
        for target in sorted(_imports(path)):
            stems = {".".join(target.split(".")[:n]) for n in (1, 2)}
            known = _KNOWN.get(str(path.relative_to(CORE.parent)), set())
            if any(target == k or target.startswith(k + ".") for k in known):
                continue
            if target.startswith(_IMPURE_OURS) or stems & _IMPURE_LIBRARIES:
                offences.append(f"{path.relative_to(SRC)}: {target}")
    assert offences == []
