#!/usr/bin/env bash
# The official MCP SDKs' own Streamable-HTTP and SSE tests, run twice: bare, and with every
# httpx/httpx2 AsyncClient they build sent through our AsyncRetryTransport and their client
# factory replaced by our mcp_client (tests/sdk_suites/sdk_wrap.py). Fails on any difference
# between the two runs other than those listed in tests/sdk_suites/by_design.toml, on any
# failure of the bare run, and if the wrapped run wrapped no client.
#
# Each SDK's sdist is downloaded from the package index into a cache outside the repository
# (MCP_SAFE_RETRY_CACHE, default ~/.cache/mcp-safe-retry), with a virtual environment of its
# own holding that sdist, the test dependencies its pyproject declares, and this project.
# Usage: bash scripts/sdk_suites.sh [mcp2|mcp1]...   (default: both)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python3}"
cache="${MCP_SAFE_RETRY_CACHE:-$HOME/.cache/mcp-safe-retry}/sdk"
here="$repo/tests/sdk_suites"
jobs="${MCP_SAFE_RETRY_SDK_JOBS:-2}"  # pytest-xdist workers; both SDKs' dev groups bring xdist
limit="${MCP_SAFE_RETRY_SDK_TIMEOUT:-900}"  # seconds for one pytest run: a hang fails, not waits
quiet() { grep -v "^WARNING: Location" || true; }  # pip's warning for each configured index that is absent
pip_install() { "$1/bin/python" -m pip install --quiet --disable-pip-version-check "${@:2}"; }

# $1: the SDK's version, the rest: test dependencies the SDK's dev group leaves out.
# Downloads and unpacks its sdist and builds a venv holding the SDK with all its extras and
# its dev group (what its CI installs: tests/sdk_suites/dev_deps.py), rebuilt when the sdist,
# those requirements or Python change; then installs this project into it, editable (again
# when its pyproject.toml or place changes).
prepare() {
  local version="$1" dir="$cache/mcp-$version"
  shift
  local sdist="$dir/mcp-$version.tar.gz" src="$dir/mcp-$version" venv="$dir/venv"
  mkdir -p "$dir"
  if [ ! -f "$sdist" ]; then
    "$python" -m pip download --quiet --disable-pip-version-check --no-binary :all: --no-deps \
      "mcp==$version" -d "$dir/download" 2> >(quiet >&2) >&2
    mv "$dir/download/mcp-$version.tar.gz" "$sdist"
    rm -rf "$dir/download" "$src"
  fi
  [ -d "$src" ] || tar -xzf "$sdist" -C "$dir"
  local requirements sdk_key project_key
  requirements="$("$python" "$here/dev_deps.py" "$src"; printf '%s\n' "$@")"
  sdk_key="$(printf '%s\n' "$(sha256sum "$sdist")" "$requirements" "$("$python" -VV)" | sha256sum)"
  project_key="$(printf '%s\n' "$(sha256sum "$repo/pyproject.toml")" "$repo" | sha256sum)"
  if [ ! -x "$venv/bin/python" ] || [ "$(cat "$dir/venv.key" 2>/dev/null)" != "$sdk_key" ]; then
    echo "sdk-suites: building the venv for mcp $version (its sdist, extras and dev group)" >&2
    rm -rf "$venv" "$dir/venv.key" "$dir/project.key"
    "$python" -m venv "$venv"
    local -a lines
    mapfile -t lines <<<"$requirements"
    # The sdist's version comes from git tags, which an sdist has none of: say it.
    UV_DYNAMIC_VERSIONING_BYPASS="$version" pip_install "$venv" "${lines[@]}" 2> >(quiet >&2)
    echo "$sdk_key" >"$dir/venv.key"
  fi
  if [ "$(cat "$dir/project.key" 2>/dev/null)" != "$project_key" ]; then
    pip_install "$venv" -e "$repo" 2> >(quiet >&2)
    echo "$project_key" >"$dir/project.key"
  fi
}

# $1: a label, $2: the SDK's version, the rest: pytest selection arguments. Both SDKs leave
# out tests/client/test_stdio.py: no HTTP client there, and a race of its own between a
# child process dying and a write to its stdin fails a test now and then, bare or not.
# Runs the selection bare and wrapped, then compares the two runs.
compare_runs() {
  local label="$1" version="$2"
  shift 2
  local dir="$cache/mcp-$version"
  local src="$dir/mcp-$version" venv="$dir/venv" out="$dir/runs/$label"
  rm -rf "$out"
  mkdir -p "$out/counts"
  local mode start status
  for mode in bare wrapped; do
    local -a plugins=(-p sdk_results)
    [ "$mode" = wrapped ] && plugins+=(-p sdk_wrap)
    start=$SECONDS
    status=0
    (cd "$src" && PYTHONPATH="$here" MCP_SAFE_RETRY_SDK_RESULTS="$out/$mode.json" \
      MCP_SAFE_RETRY_SDK_COUNTS="$out/counts" \
      timeout "$limit" "$venv/bin/python" -m pytest -p no:cacheprovider "${plugins[@]}" --color=no -q \
      -n "$jobs" -o log_cli=false "$@" >"$out/$mode.log" 2>&1) || status=$?
    echo "sdk-suites: $label $mode: pytest exit $status in $((SECONDS - start)) s ($out/$mode.log)" >&2
    if [ "$status" -gt 1 ]; then  # not "some tests failed": timed out, internal error, usage
      tail -n 40 "$out/$mode.log" >&2
      exit "$status"
    fi
  done
  "$venv/bin/python" "$here/compare.py" --label "$label" --by-design "$here/by_design.toml" \
    "$out/bare.json" "$out/wrapped.json" "$out/counts" || failed=1
}

run_mcp2() {
  local version=2.3.0
  prepare "$version"
  compare_runs "mcp-$version" "$version" --ignore=tests/client/test_stdio.py \
    tests/shared/test_streamable_http.py tests/shared/test_httpx_utils.py tests/client/ \
    tests/interaction/ tests/issues/ tests/server/test_streamable_http_manager.py
}

run_mcp1() {
  local version=1.30.0
  # tests/shared/test_streamable_http.py imports requests, which uv's environment gets only
  # through the docs group (mkdocs-material).
  prepare "$version" requests
  # test_command_execution runs the uv command (Claude Desktop's config), nothing over HTTP.
  compare_runs "mcp-$version" "$version" --ignore=tests/client/test_stdio.py \
    --deselect tests/client/test_config.py::test_command_execution \
    tests/shared/test_streamable_http.py tests/shared/test_sse.py tests/shared/test_httpx_utils.py \
    tests/client/ tests/issues/ tests/server/test_streamable_http_manager.py
}

# A failure to set up or to run pytest at all ends the script here (set -e); a difference
# between the runs is reported for each SDK, then fails the script at the end.
failed=0
for sdk in ${*:-mcp2 mcp1}; do
  "run_$sdk"
done
exit "$failed"
