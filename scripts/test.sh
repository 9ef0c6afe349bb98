#!/usr/bin/env bash
# Install (if needed) and run the test suite: bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec .venv/bin/python -m pytest tests -p no:cacheprovider "$@"
