#!/usr/bin/env bash
# Usage: bash tools/dist_test.sh CONFIG CHECKPOINT NUM_PROCS [test.py args...]
# Launches one process per GPU (or per CPU slot with the gloo backend).
exec bash "$(dirname "$0")/dist_launch.sh" "$3" test.py "$1" "$2" "${@:4}"
