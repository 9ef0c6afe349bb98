#!/usr/bin/env bash
# Install (if needed) and run the test suite: bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# TEST_WORKERS pytest-xdist processes (default 2; 0 runs in this process),
# one torch thread each: two processes with default threads on 2 cores
# slow each other down many times over
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
# --durations=10: the slowest tests and the total, in every run's output (a
# guard against regrowth; the quick tier for developers: -m "not slow")
exec .venv/bin/python -m pytest tests -p no:cacheprovider \
    -n "${TEST_WORKERS:-2}" --durations=10 "$@"
