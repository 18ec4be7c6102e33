#!/usr/bin/env bash
# Install what the tests need and run them: ruff, mypy --strict, then pytest.
#
#   bash tools/test.sh            # everything
#   bash tools/test.sh -k notebooks   # extra arguments go to pytest
#
# It creates .venv (Python 3.11) when missing, installs msready with its test extra
# (MindSpore CPU, torch 2.13.0 CPU, pytest, ruff, mypy, jsonschema), and Debian's
# chromium for the HTML report test when it is not on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
.venv/bin/python -m pip install -q -e '.[test]'

if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq >/dev/null && apt-get install -y -qq chromium >/dev/null
    else
        echo "tools/test.sh: the HTML report test needs Debian's chromium; run as root or" \
             "install it with: sudo apt-get install chromium" >&2
        exit 1
    fi
fi

echo "== ruff"
.venv/bin/ruff check analyzer rules reports skeletons tests tools benchmarks cli.py __init__.py __main__.py

echo "== mypy --strict"
typecheck=$(mktemp -d)
trap 'rm -rf "$typecheck"' EXIT
ln -s "$root" "$typecheck/msready"
(cd "$typecheck" && "$root/.venv/bin/mypy" -p msready --config-file "$root/pyproject.toml")

echo "== pytest"
.venv/bin/python -m pytest "$@"
