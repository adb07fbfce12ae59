#!/usr/bin/env bash
# Set up a virtual environment (if missing) with the pinned dependencies and run every check:
# ruff (lint and format), mypy --strict on the package, the docs site (mkdocs build --strict, into a
# temporary folder) and the full pytest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -c constraints.txt -e ".[dev]"
.venv/bin/ruff check src tests
.venv/bin/ruff format --check src tests
.venv/bin/mypy
SITE="$(mktemp -d)"
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir "$SITE"
rm -rf "$SITE"
.venv/bin/python -m pytest -q "$@"
