#!/usr/bin/env bash
# Set up a virtual environment from the repository's own files, then run the test suite.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh -k sse -x`).
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[test,otel,mcp,kitchen]"
exec .venv/bin/python -m pytest "$@"
