#!/usr/bin/env bash
# Set up a virtual environment from the repository's own files, then run the demo:
# the official MCP client through the retry transport against the fault-injection kitchen.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[mcp,kitchen]"
exec .venv/bin/mcp-safe-retry demo "$@"
