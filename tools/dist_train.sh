#!/usr/bin/env bash
# Usage: bash tools/dist_train.sh CONFIG NUM_PROCS [train.py args...]
# Launches one process per GPU (or per CPU slot with the gloo backend).
exec bash "$(dirname "$0")/dist_launch.sh" "$2" train.py "$1" "${@:3}"
