"""Fixtures of the agent-framework tests.

Each tests/frameworks/NAME runs only inside that framework's own virtual environment
(scripts/frameworks.sh makes it and sets MCP_SAFE_RETRY_FRAMEWORK=NAME); the kitchen they call
runs from the main environment (MCP_SAFE_RETRY_KITCHEN_PYTHON), since it needs mcp 2.x.

Every tests/frameworks/NAME holds an ``__init__.py``: the directories are named like the
frameworks' own packages (``pydantic_ai``, ``smolagents``, ...), which they would otherwise
shadow. ``tests.frameworks.readme`` reads README's snippets; ``tests.frameworks.checks`` holds
the checks every framework makes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kitchen_process import Kitchen, kitchen_process

_FRAMEWORK = os.environ.get("MCP_SAFE_RETRY_FRAMEWORK", "")
# Only the named framework's directory: the others' imports are not installed here.
collect_ignore = [
    d.name for d in Path(__file__).parent.iterdir() if d.is_dir() and d.name != _FRAMEWORK
]


@pytest.fixture(scope="session")
def kitchen() -> Iterator[Kitchen]:
    """The kitchen, served by MCP_SAFE_RETRY_KITCHEN_PYTHON on 127.0.0.1 (stopped by pid)."""
    with kitchen_process() as served:
        yield served


@pytest.fixture
def anyio_backend() -> str:
    """The frameworks run on asyncio."""
    return "asyncio"
