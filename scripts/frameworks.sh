#!/usr/bin/env bash
# Run the agent-framework tests (tests/frameworks/NAME), each framework in a virtual
# environment of its own: their mcp pins conflict (some need mcp 1.x, some 2.x).
#
#   bash scripts/frameworks.sh               # every framework under tests/frameworks
#   bash scripts/frameworks.sh pydantic_ai   # just these
#
# Environments live outside the repository, in ${MCP_SAFE_RETRY_VENVS:-~/.cache/mcp-safe-retry/venvs}/NAME,
# and are rebuilt only when pyproject.toml or the framework's requirements.txt change. The kitchen the
# tests call needs mcp 2.x: it runs from the main .venv (made by scripts/test.sh), never beside the
# framework. Extra pytest arguments: MCP_SAFE_RETRY_PYTEST_ARGS="-x -k lookup".
set -uo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
python="${PYTHON:-python3}"
venvs="${MCP_SAFE_RETRY_VENVS:-$HOME/.cache/mcp-safe-retry/venvs}"

if [ ! -x .venv/bin/python ]; then
  echo "frameworks.sh: .venv/bin/python is missing; run scripts/test.sh first (the kitchen runs from it)" >&2
  exit 2
fi

if [ "$#" -gt 0 ]; then
  names=("$@")
else
  names=()
  for dir in tests/frameworks/*/; do
    [ -f "$dir/requirements.txt" ] && names+=("$(basename "$dir")")
  done
fi

# An environment is current when it was built from these exact files.
stamp_of() { cat pyproject.toml "tests/frameworks/$1/requirements.txt" | sha256sum | cut -c1-16; }

prepare() {
  local name="$1" venv="$venvs/$1" stamp
  stamp="$(stamp_of "$name")"
  if [ -f "$venv/.frameworks-stamp" ] && [ "$(cat "$venv/.frameworks-stamp")" = "$stamp" ]; then
    return 0
  fi
  rm -rf "$venv" && mkdir -p "$venvs" && "$python" -m venv "$venv" || return 1
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    -e "$repo[test]" -r "tests/frameworks/$name/requirements.txt" || return 1
  echo "$stamp" >"$venv/.frameworks-stamp"
}

# Environments are made side by side (installs mostly wait on the network), at most
# MCP_SAFE_RETRY_INSTALL_JOBS at a time; each install's output goes to NAME.log beside it.
jobs_max="${MCP_SAFE_RETRY_INSTALL_JOBS:-4}"
mkdir -p "$venvs"
declare -A installing=()
for name in "${names[@]}"; do
  [ -f "tests/frameworks/$name/requirements.txt" ] || continue
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
  prepare "$name" >"$venvs/$name.log" 2>&1 &
  installing[$name]=$!
done

summary=()
failed=0
for name in "${names[@]}"; do
  if [ ! -f "tests/frameworks/$name/requirements.txt" ]; then
    summary+=("$name: no tests/frameworks/$name/requirements.txt")
    failed=1
    continue
  fi
  start=$SECONDS
  if ! wait "${installing[$name]}"; then
    cat "$venvs/$name.log" >&2
    summary+=("$name: FAILED to install (${venvs}/$name; log above)")
    failed=1
    continue
  fi
  # PYTHONPATH: this checkout's code, whichever checkout last installed the environment.
  # shellcheck disable=SC2086
  if PYTHONPATH="$repo/src${PYTHONPATH:+:$PYTHONPATH}" MCP_SAFE_RETRY_FRAMEWORK="$name" \
    MCP_SAFE_RETRY_KITCHEN_PYTHON="$repo/.venv/bin/python" \
    "$venvs/$name/bin/python" -m pytest -q -p no:cacheprovider ${MCP_SAFE_RETRY_PYTEST_ARGS:-} \
    "tests/frameworks/$name"; then
    summary+=("$name: passed ($((SECONDS - start)) s)")
  else
    summary+=("$name: FAILED ($((SECONDS - start)) s)")
    failed=1
  fi
done

echo
echo "frameworks:"
for line in "${summary[@]}"; do echo "  $line"; done
exit "$failed"
