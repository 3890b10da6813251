#!/usr/bin/env bash
# Build the documentation site into site/ from docs/, mkdocs.yml and the docstrings under src/
# (MkDocs, Material, mkdocstrings), with warnings as errors: a broken link or anchor, a
# docstring naming a parameter the signature lacks, a missing snippet fail the build.
# Extra arguments go to `mkdocs build` (e.g. `--site-dir /tmp/site`); `bash scripts/docs.sh
# serve` serves it with live reload instead.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[docs]"
# Material prints a notice about its successor, Zensical, on every build; the build here is
# MkDocs 1.x with Material 9, which reads this same mkdocs.yml.
export NO_MKDOCS_2_WARNING=1
if [ "${1:-}" = serve ]; then
  exec .venv/bin/mkdocs serve --strict "${@:2}"
fi
exec .venv/bin/mkdocs build --strict "$@"
