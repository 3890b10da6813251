"""Every Python block of README.md and the documentation pages runs as written, or says in
its fence that it is a fragment.

Each block runs in a Python process of its own, with the servers it names started here: the
kitchen as README starts it (``mcp-safe-retry kitchen``, on a free port instead of 8765, so
that runs on one machine do not collide) and a redis-server of the test's own. A block
followed by a ```text block must print exactly that. README's quick start also type-checks
under ``mypy --strict``. Blocks for the mcp 1.x client run in tests/mcp1 (its own environment).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs_support import (
    KITCHEN_URL,
    REDIS_URL,
    ROOT,
    Block,
    python_blocks,
    readme_block,
)
from tests.kitchen_process import first_line
from tests.redis_support import RedisServer

pytestmark = pytest.mark.e2e
RUNNABLE = [b for b in python_blocks() if not b.fragment and not b.mcp1]
WITH_REDIS = [b for b in RUNNABLE if REDIS_URL in b.code]
BLOCK_TIMEOUT = 120.0


@pytest.fixture(scope="module")
def kitchen_url() -> Iterator[str]:
    """The kitchen started by README's command (``mcp-safe-retry kitchen``), port 0."""
    command = Path(sys.executable).with_name("mcp-safe-retry")
    process = subprocess.Popen(
        [str(command), "kitchen", "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    try:
        yield first_line(process)
    finally:
        process.terminate()
        process.wait(timeout=10)


def _run(block: Block, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = cwd / "block.py"
    script.write_text(code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT,
        check=False,
    )


def _check(block: Block, code: str, cwd: Path) -> None:
    done = _run(block, code, cwd)
    assert done.returncode == 0, f"{block.name} failed:\n{done.stdout}\n{done.stderr}"
    if block.followed_by is not None:
        assert done.stdout == block.followed_by, f"{block.name} printed:\n{done.stdout}"


@pytest.mark.parametrize(
    "block", [pytest.param(b, id=b.name) for b in RUNNABLE if b not in WITH_REDIS]
)
def test_block_runs_as_written(block: Block, kitchen_url: str, tmp_path: Path) -> None:
    _check(block, block.code.replace(KITCHEN_URL, kitchen_url), tmp_path)


@pytest.mark.parametrize("block", [pytest.param(b, id=b.name) for b in WITH_REDIS])
def test_block_with_redis_runs_as_written(
    block: Block, kitchen_url: str, redis_server: RedisServer, tmp_path: Path
) -> None:
    code = block.code.replace(KITCHEN_URL, kitchen_url).replace(REDIS_URL, redis_server.url)
    _check(block, code, tmp_path)


def test_every_block_is_run_or_marked_a_fragment() -> None:
    blocks = python_blocks()
    assert len(RUNNABLE) >= 10  # the collection itself works
    # A fragment says in its title why it cannot run alone ("fragment: ...").
    unexplained = [b.name for b in blocks if b.fragment and 'title="fragment: ' not in b.info]
    assert unexplained == []
    mcp1 = [b for b in blocks if b.mcp1 and not b.fragment]
    assert mcp1, "the mcp 1.x example is found"
    runner = (ROOT / "tests" / "mcp1" / "test_docs_examples.py").read_text()
    assert "python_blocks()" in runner and ".mcp1" in runner  # the same selection, run there


def test_the_quick_start_prints_what_readme_says() -> None:
    block = readme_block("streamable_http_client")
    assert block.followed_by is not None and "TOOL_SUCCESS" in block.followed_by
    assert block in RUNNABLE  # run above, against the kitchen, as written
    assert KITCHEN_URL in block.code


def test_the_quick_start_type_checks(tmp_path: Path) -> None:
    script = tmp_path / "quickstart.py"
    script.write_text(readme_block("streamable_http_client").code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
