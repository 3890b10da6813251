"""Print the pip requirements of an SDK sdist's tests (its extras and ``dev`` group), one a line.

Usage: ``python dev_deps.py SDIST_DIR``. The group is read from the sdist's own
pyproject.toml, so the test environment follows what the SDK declares; the SDK itself comes
with all its extras, as its CI installs it. uv workspace members (``mcp``,
``mcp-example-stories``, ``mcp-types``) become the sdist's own directories, so nothing of
the SDK comes from anywhere but this sdist; a
requirement uv takes from a git repository (``strict-no-cover``, a coverage checker the
tests do not import) is left out and named on stderr.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?(.*)$")


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _workspace_members(root: Path, project: dict[str, object]) -> dict[str, Path]:
    """Each uv workspace member's distribution name, mapped to its directory."""
    members: dict[str, Path] = {_normalized(str(project["name"])): root}
    uv = project.get("uv_workspace", [])
    assert isinstance(uv, list)
    for pattern in uv:
        for directory in sorted(root.glob(str(pattern))):
            pyproject = directory / "pyproject.toml"
            if pyproject.is_file():
                name = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["name"]
                members[_normalized(name)] = directory
    return members


def requirements(root: Path) -> list[str]:
    """The SDK at ``root`` with all its extras and its dev group, as pip requirement lines
    (what the SDK's own CI installs: ``uv sync --all-extras --dev``)."""
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    uv = data.get("tool", {}).get("uv", {})
    sources: dict[str, dict[str, object]] = {
        _normalized(name): source for name, source in uv.get("sources", {}).items()
    }
    project = {
        "name": data["project"]["name"],
        "uv_workspace": uv.get("workspace", {}).get("members", []),
    }
    members = _workspace_members(root, project)
    extras: dict[Path, set[str]] = {root: set(data["project"].get("optional-dependencies", {}))}
    lines: list[str] = []
    for requirement in data.get("dependency-groups", {}).get("dev", []):
        if not isinstance(requirement, str):  # an include-group table: none in these SDKs
            raise SystemExit(f"unsupported dependency-group entry: {requirement!r}")
        match = _NAME.match(requirement)
        assert match is not None, requirement
        name = _normalized(match.group(1))
        named = {extra.strip() for extra in (match.group(2) or "[]")[1:-1].split(",") if extra}
        source = sources.get(name, {})
        if "git" in source:
            print(
                f"left out (a git source, not on the package index): {requirement}", file=sys.stderr
            )
        elif source.get("workspace") and name in members:
            extras.setdefault(members[name], set()).update(named)
        else:
            lines.append(requirement)
    # The SDK's own workspace libraries it pins to its version (mcp 2.x: mcp-types), from here too.
    for name, directory in members.items():
        if name in sources and sources[name].get("workspace"):
            extras.setdefault(directory, set())
    workspace = [
        f"{directory}[{','.join(sorted(named))}]" if named else str(directory)
        for directory, named in extras.items()
    ]
    return workspace + lines


if __name__ == "__main__":
    print("\n".join(requirements(Path(sys.argv[1]))))
