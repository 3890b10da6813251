#!/usr/bin/env bash
# Set up virtual environments from the repository's own files, then run the test suite.
# Extra arguments go to the main pytest run (e.g. `bash scripts/test.sh -k sse -x`).
# The official mcp 1.x client cannot share an environment with mcp 2.x, so its end-to-end
# tests run in a second environment (.venv-mcp1) against a kitchen served by the first;
# set MCP_SAFE_RETRY_SKIP_MCP1=1 to leave them out.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
pip_install() { "$1/bin/python" -m pip install --quiet --disable-pip-version-check "${@:2}"; }

# The Redis tests start a real redis-server of their own (set MCP_SAFE_RETRY_REDIS_SERVER to
# use another binary); on a fresh Debian machine, as root, install the distribution's.
if ! command -v redis-server >/dev/null && [ -z "${MCP_SAFE_RETRY_REDIS_SERVER:-}" ] \
  && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
fi

[ -x .venv/bin/python ] || "$python" -m venv .venv
pip_install .venv -e ".[test,otel,mcp,kitchen,fast,redis,fastmcp,tasks-peer]"
.venv/bin/python -m pytest "$@"

if [ "${MCP_SAFE_RETRY_SKIP_MCP1:-0}" != "1" ]; then
  [ -x .venv-mcp1/bin/python ] || "$python" -m venv .venv-mcp1
  pip_install .venv-mcp1 -e ".[test]" "mcp==1.30.0"
  MCP_SAFE_RETRY_KITCHEN_PYTHON="$PWD/.venv/bin/python" .venv-mcp1/bin/python -m pytest -q tests/mcp1
fi
