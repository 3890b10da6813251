#!/usr/bin/env bash
# The release's build-and-check steps, as the release workflow (.github/workflows/release.yml)
# runs them before publishing and CI runs them on every change: build the sdist and the wheel
# from the repository, check both with `twine check`, install the wheel into a fresh virtual
# environment with no extras and run the smoke test there (scripts/smoke_test.py).
# The first argument is where the distributions go (default dist/).
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
out="${1:-dist}"
pip_install() { "$1/bin/python" -m pip install --quiet --disable-pip-version-check "${@:2}"; }

echo "release_check: installing build and twine into .venv-release (the build tools only)"
[ -x .venv-release/bin/python ] || "$python" -m venv .venv-release
pip_install .venv-release "build>=1.2" "twine>=5.1"
rm -rf "$out"
.venv-release/bin/python -m build --outdir "$out" .
.venv-release/bin/twine check --strict "$out"/*.tar.gz "$out"/*.whl

fresh="$(mktemp -d)"
trap 'rm -rf "$fresh"' EXIT
echo "release_check: installing the wheel, with no extras, into a fresh environment"
"$python" -m venv "$fresh/venv"
pip_install "$fresh/venv" "$out"/*.whl
(cd "$fresh" && "$fresh/venv/bin/python" "$OLDPWD/scripts/smoke_test.py")
if [ -n "${RELEASE_TAG:-}" ]; then  # the release workflow: the tag names the version built
  built="$(cd "$fresh" && "$fresh/venv/bin/python" -c 'import mcp_safe_retry; print(mcp_safe_retry.__version__)')"
  [ "$RELEASE_TAG" = "v$built" ] || { echo "release_check: tag $RELEASE_TAG is not v$built" >&2; exit 1; }
fi
echo "release_check: $(ls "$out" | tr '\n' ' ')built, checked, installed bare and smoke-tested"
