#!/usr/bin/env bash
# Install (if needed), make the toy zero-shot data, train SIGN through all of
# its stages with tools/train.py and evaluate with tools/test.py.
#   bash scripts/demo.sh [extra tools/train.py args, e.g. --cfg-options ...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
PY=.venv/bin/python
CONFIG=configs/sign/sign_toy.py
WORK_DIR=${WORK_DIR:-work_dirs/sign_toy}

[ -f data/toy/class_embeddings.npz ] || $PY tools/make_toy_dataset.py
$PY tools/train.py "$CONFIG" --work-dir "$WORK_DIR" "$@"
$PY tools/test.py "$CONFIG" "$WORK_DIR/iter_$($PY -c "
from mmengine.config import Config
print(Config.fromfile('$CONFIG').train_cfg.max_iters)").pth" \
  --work-dir "$WORK_DIR/test" --show-dir "$WORK_DIR/vis"
echo "Checkpoint, logs and pictures: $WORK_DIR (test pictures: $WORK_DIR/vis/vis_data/vis_image)"
