"""The package as released: one version source, the metadata a package index shows, the
release path that .ci/run tests, and optional modules that name their extra."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib.metadata import distribution
from pathlib import Path

import pytest

import mcp_safe_retry
from mcp_safe_retry._extras import missing_extra

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_version_is_written_once_and_read_from_the_metadata() -> None:
    written = PYPROJECT["project"]["version"]
    assert mcp_safe_retry.__version__ == distribution("mcp-safe-retry").version == written
    sources = [
        p.relative_to(ROOT)
        for p in (ROOT / "src").rglob("*.py")
        if re.search(rf'^__version__ = "{re.escape(written)}"', p.read_text(), re.MULTILINE)
    ]
    assert sources == []  # no second copy to drift


def test_the_command_prints_the_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcp_safe_retry", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == f"mcp-safe-retry {mcp_safe_retry.__version__}\n"


def test_the_changelog_has_a_section_for_the_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert changelog.index("## [Unreleased]") < changelog.index(
        f"## [{mcp_safe_retry.__version__}] - "
    )


def test_the_metadata_names_license_classifiers_and_urls() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    assert {"Typing :: Typed", "Programming Language :: Python :: 3.11"} <= set(
        project["classifiers"]
    )
    assert set(project["urls"]) == {"Documentation", "Source", "Changelog", "Issues"}
    assert project["urls"]["Documentation"] in (ROOT / "README.md").read_text()


def test_ci_and_the_release_workflow_take_the_same_build_and_check_steps() -> None:
    workflow = (ROOT / ".github" / "workflows" / "release.yml").read_text()
    assert "bash scripts/release_check.sh" in workflow and "id-token: write" in workflow
    assert "bash scripts/release_check.sh" in (ROOT / ".ci" / "run").read_text()
    script = (ROOT / "scripts" / "release_check.sh").read_text()
    for step in ("-m build", "twine check", "-m venv", "smoke_test.py"):
        assert step in script


def test_a_missing_extra_is_named() -> None:
    error = ModuleNotFoundError("No module named 'httpx2'", name="httpx2")
    named = missing_extra("mcp_safe_retry.httpx2", "mcp", error, ("httpx2",))
    assert str(named) == (
        "mcp_safe_retry.httpx2 needs the 'mcp' extra (httpx2 is not installed): "
        "pip install 'mcp-safe-retry[mcp]'"
    )
    assert named.name == "httpx2"
    other = ModuleNotFoundError("No module named 'nope'", name="nope")
    assert missing_extra("mcp_safe_retry.httpx2", "mcp", other, ("httpx2",)) is other


@pytest.mark.parametrize(
    ("module", "extra", "blocked"),
    [
        pytest.param("mcp_safe_retry.httpx2", "mcp", "httpx2", id="httpx2"),
        pytest.param("mcp_safe_retry.otel", "otel", "opentelemetry", id="otel"),
        pytest.param("mcp_safe_retry.redis", "redis", "redis", id="redis"),
        pytest.param("mcp_safe_retry.kitchen", "kitchen", "uvicorn", id="kitchen"),
    ],
)
def test_an_optional_module_without_its_extra_names_it(
    module: str, extra: str, blocked: str
) -> None:
    # A Python where the extra's library cannot be imported (a finder that refuses it).
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.partition('.')[0] == {blocked!r}:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
        f"import {module}\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        f"ModuleNotFoundError: {module} needs the '{extra}' extra ({blocked} is not installed): "
        f"pip install 'mcp-safe-retry[{extra}]'"
    )
