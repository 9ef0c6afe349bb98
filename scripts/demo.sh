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
# a second demo in the same work dir tests the first run again when it
# ended, and continues it (--resume) when it was cut short
RESUME=(); FINISHED=0
if [ -f "$WORK_DIR/last_checkpoint" ]; then
  RESUME=(--resume)
  FINISHED=$($PY - "$WORK_DIR/$(basename "$CONFIG")" \
    "$(cat "$WORK_DIR/last_checkpoint")" 2>/dev/null <<'EOF' || echo 0
import re
import sys

from mmengine.config import Config

from mmseg_sign.structures import StagePlan

cfg = Config.fromfile(sys.argv[1])  # the run's own
plan = StagePlan.from_config(cfg)
length = plan.total_iters if plan else cfg.train_cfg['max_iters']
done = re.search(r'iter_(\d+)\.pth$', sys.argv[2])
print(int(bool(done) and int(done.group(1)) >= length))
EOF
)
fi
if [ "$FINISHED" = 1 ]; then
  echo "$WORK_DIR holds a finished run: testing it again (delete the folder," \
    "or give another WORK_DIR, to train anew)"
else
  $PY tools/train.py "$CONFIG" --work-dir "$WORK_DIR" "${RESUME[@]}" "$@"
fi
CHECKPOINT=$(cat "$WORK_DIR/last_checkpoint")
$PY tools/test.py "$CONFIG" "$CHECKPOINT" --work-dir "$WORK_DIR/test" \
  --show-dir "$WORK_DIR/vis" 2>&1 | tee "$WORK_DIR/test.log" | \
  grep -v -e Warning -e pkg_resources -e _bootstrap
$PY tools/analysis/toy_report.py "$CONFIG" "$CHECKPOINT" --work-dir "$WORK_DIR" \
  2>&1 | grep -e '^Predictions' -e '^Losses'
echo "Checkpoint: $CHECKPOINT"
echo "mmseg visualizer output of tools/test.py: $WORK_DIR/vis/vis_data/vis_image"
