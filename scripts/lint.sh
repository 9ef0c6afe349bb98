#!/usr/bin/env bash
# Lint and format checks as OpenMMLab projects run them (mmsegmentation's
# pre-commit hooks: flake8, isort, yapf, codespell), with the same settings
# (setup.cfg) and pinned versions, installed with pip into the project's
# virtual environment: no pre-commit hook repositories to fetch.
#   bash scripts/lint.sh          check (CI runs this before the tests)
#   bash scripts/lint.sh --fix    sort the imports and format in place first
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
# the versions of .pre-commit-config.yaml's hooks
TOOLS=(flake8==5.0.4 isort==5.11.5 yapf==0.32.0 codespell==2.2.1)
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
PY="$VENV/bin/python"
have() {
  "$PY" - "${TOOLS[@]}" <<'PYEOF'
import sys
from importlib.metadata import PackageNotFoundError, version
for spec in sys.argv[1:]:
    name, want = spec.split('==')
    try:
        assert version(name) == want
    except (PackageNotFoundError, AssertionError):
        sys.exit(1)
PYEOF
}
if ! have; then
  "$PY" -m pip install --disable-pip-version-check -q "${TOOLS[@]}"
fi
PATHS=(mmseg_sign tools tests configs setup.py)
if [ "${1:-}" = "--fix" ]; then
  "$PY" -m isort -q "${PATHS[@]}"
  "$PY" -m yapf -r -i -p "${PATHS[@]}"
fi
status=0
echo "[lint] flake8";    "$PY" -m flake8 "${PATHS[@]}" || status=1
echo "[lint] isort";     "$PY" -m isort --check-only --diff -q "${PATHS[@]}" || status=1
echo "[lint] yapf";      "$PY" -m yapf -r -d -p "${PATHS[@]}" || status=1
echo "[lint] codespell"; "$VENV/bin/codespell" "${PATHS[@]}" docs README.md || status=1
if [ "$status" != 0 ]; then
  echo "[lint] failed: 'bash scripts/lint.sh --fix' sorts and formats;" \
    "fix what flake8 and codespell name by hand" >&2
else
  echo "[lint] ok"
fi
exit "$status"
