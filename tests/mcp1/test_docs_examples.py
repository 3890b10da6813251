"""The documentation's examples for the official mcp 1.x client, run as written (the main
environment runs every other block: tests/docs/test_examples.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs_support import KITCHEN_URL, Block, python_blocks
from tests.kitchen_process import Kitchen, kitchen_process

pytestmark = pytest.mark.e2e
MCP1_BLOCKS = [b for b in python_blocks() if b.mcp1 and not b.fragment]


@pytest.fixture(scope="module")
def kitchen() -> Iterator[Kitchen]:
    with kitchen_process() as served:
        yield served


@pytest.mark.parametrize("block", [pytest.param(b, id=b.name) for b in MCP1_BLOCKS])
def test_block_runs_as_written(block: Block, kitchen: Kitchen, tmp_path: Path) -> None:
    script = tmp_path / "block.py"
    script.write_text(block.code.replace(KITCHEN_URL, kitchen.url), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # It shows the tool call's record, as made by this mcp 1.x client.
    is_error, _, printed = done.stdout.partition("\n")
    record = json.loads(printed)
    assert is_error == "False"
    assert record["method"] == "tools/call" and record["outcome"] == "TOOL_SUCCESS"


def test_there_is_one() -> None:
    assert MCP1_BLOCKS
