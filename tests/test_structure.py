"""The package's import structure, read from the source (ast; nothing is imported).

No import circle anywhere under src/, ``TYPE_CHECKING`` imports included; the core is pure:
nothing under ``core/`` imports instrumentation, a shell, the shared (Redis) parts, an HTTP
or async library, a clock, randomness, or any other library that does I/O; and the layers
run one way: the face (the top-level modules) -> the shells -> the core, with the shared
parts beside the shells and instrumentation told by them, never by the core.
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
    "mcp_safe_retry.kitchen",
)
_IMPURE_LIBRARIES = {
    "tenacity", "httpx", "httpx2", "httpcore", "anyio", "trio", "asyncio", "sniffio",
    "redis", "socket", "ssl", "select", "selectors", "subprocess", "urllib.request", "http",
    "requests", "aiohttp", "opentelemetry", "logging", "mcp", "fastmcp", "uvicorn",
    "starlette", "random", "secrets", "time", "os", "shutil", "tempfile", "pathlib",
}  # fmt: skip


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
            if target.startswith(_IMPURE_OURS) or stems & _IMPURE_LIBRARIES:
                offences.append(f"{path.relative_to(SRC)}: {target}")
    assert offences == []


# What each layer never imports. The face is the package's top-level modules (``__init__``,
# ``policy``, ``records``, ...); the CLI, the framework adapters, the gateway and the kitchen
# sit above it.
_FACE = "face"
_ABOVE = (
    "mcp_safe_retry.cli",
    "mcp_safe_retry.frameworks",
    "mcp_safe_retry.gateway",
    "mcp_safe_retry.kitchen",
)
_NEVER = {
    "mcp_safe_retry.core": (
        _FACE,
        "mcp_safe_retry.shells",
        "mcp_safe_retry.shared",
        "mcp_safe_retry.instrumentation",
        *_ABOVE,
    ),
    "mcp_safe_retry.shells": (_FACE, *_ABOVE),
    "mcp_safe_retry.shared": (_FACE, "mcp_safe_retry.shells", *_ABOVE),
    "mcp_safe_retry.instrumentation": (
        _FACE,
        "mcp_safe_retry.shells",
        "mcp_safe_retry.shared",
        *_ABOVE,
    ),
}
# Known, each with its reason; the list only shrinks.
_KNOWN_UPWARD: set[tuple[str, str]] = set()


def _layer(module: str) -> str:
    """The package a module belongs to (``face`` for the package's top-level modules)."""
    parts = module.split(".")
    if parts[0] != "mcp_safe_retry":
        return parts[0]
    if len(parts) == 1 or not (SRC / "mcp_safe_retry" / parts[1]).is_dir():
        return _FACE
    return ".".join(parts[:2])


def _upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import that runs against the layers, as ``module -> imported``."""
    return [
        f"{name} -> {target}"
        for name, targets in sorted(graph.items())
        for target in sorted(targets)
        if _layer(target) in _NEVER.get(_layer(name), ()) and (name, target) not in _KNOWN_UPWARD
    ]


def test_the_layers_run_one_way() -> None:
    assert _upward(_graph()) == []


def test_the_layer_check_finds_an_upward_import() -> None:
    graph = {
        "mcp_safe_retry.core.call": {"mcp_safe_retry.core.events", "mcp_safe_retry.policy"},
        "mcp_safe_retry.shells.httpx_async": {"mcp_safe_retry.cli.demo"},
        "mcp_safe_retry.policy": {"mcp_safe_retry.core.policy"},
        "mcp_safe_retry.cli.demo": {"mcp_safe_retry.httpx2", "mcp_safe_retry.kitchen"},
    }
    assert _upward(graph) == [
        "mcp_safe_retry.core.call -> mcp_safe_retry.policy",
        "mcp_safe_retry.shells.httpx_async -> mcp_safe_retry.cli.demo",
    ]
    assert _layer("mcp_safe_retry") == _layer("mcp_safe_retry._system") == _FACE
    assert _layer("mcp_safe_retry.shells.generated.httpx_sync") == "mcp_safe_retry.shells"
