#!/usr/bin/env bash
# Install (if needed), make the toy zero-shot data, train SIGN through all of
# its stages (train -> transfer -> annealed self-training) with
# tools/train.py, evaluate with tools/test.py (seen / unseen / harmonic mIoU)
# and draw pictures of the predictions and of the losses.
#   bash scripts/demo.sh [extra tools/train.py args, e.g. --cfg-options ...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
PY=.venv/bin/python
CONFIG=${CONFIG:-configs/sign/sign_toy.py}
WORK_DIR=${WORK_DIR:-work_dirs/sign_toy}

[ -f data/toy/class_embeddings.npz ] || $PY tools/make_toy_dataset.py
# a second demo continues (or, when it ended, just re-tests) the first run
RESUME=(); [ -f "$WORK_DIR/last_checkpoint" ] && RESUME=(--resume)
$PY tools/train.py "$CONFIG" --work-dir "$WORK_DIR" "${RESUME[@]}" "$@"
CHECKPOINT=$(cat "$WORK_DIR/last_checkpoint")
$PY tools/test.py "$CONFIG" "$CHECKPOINT" --work-dir "$WORK_DIR/test" \
  --show-dir "$WORK_DIR/vis" 2>&1 | tee "$WORK_DIR/test.log" | \
  grep -v -e Warning -e pkg_resources -e _bootstrap
$PY tools/analysis/toy_report.py "$CONFIG" "$CHECKPOINT" --work-dir "$WORK_DIR" \
  2>&1 | grep -e '^Predictions' -e '^Losses'
echo "Checkpoint: $CHECKPOINT"
echo "mmseg visualizer output of tools/test.py: $WORK_DIR/vis/vis_data/vis_image"
