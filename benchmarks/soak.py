"""Soak run: thousands of MCP tool calls through mcp-safe-retry against the fault kitchen.

``python benchmarks/soak.py --calls 10000`` (or ``python -m benchmarks.soak``; ``--json`` for
a machine-readable report). The harness (the seeded plan, the client paths, the checker of
the invariants) is ``tests/soak_support.py``, which its smoke test drives in miniature.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # a checkout: tests.soak_support

from tests.soak_support import main

if __name__ == "__main__":
    sys.exit(main())
