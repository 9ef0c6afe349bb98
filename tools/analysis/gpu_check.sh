#!/usr/bin/env bash
# The GPU evidence for mixed precision (docs/toy_results.md, "Mixed
# precision"; docs/benchmark.md), in steps that each end well inside a
# 10-minute call on one H100 (about 30 minutes in all):
#
#   bash tools/analysis/gpu_check.sh install      # once per machine (~4 min)
#   bash tools/analysis/gpu_check.sh toy float32  # 3 seeds, all stages
#   bash tools/analysis/gpu_check.sh toy float16
#   bash tools/analysis/gpu_check.sh toy bfloat16
#   bash tools/analysis/gpu_check.sh bench        # fp32, fp16, bf16 speed
#   bash tools/analysis/gpu_check.sh all          # every step in one go
#
# Every step skips what is already done (an installed package, a finished
# run in WORK/toy/results.json), so a step cut off by a time limit is
# simply started again. Results (small files) go to OUT: versions and GPU
# settings, toy_results.json + toy_table.md (the same table as
# tools/toy_table.py prints on a CPU), bench_<dtype>.md.
#
# Environment:
#   PY      python with a CUDA build of torch (default: python3)
#   WHEELS  a folder to install from without a network (pip --no-index
#           --find-links): the sdist mmcv-2.1.0.tar.gz and wheels of
#           mmengine 0.10.7, mmsegmentation 1.2.2, gensim and their
#           dependencies that the machine lacks (`pip download`, README)
#   OUT     results folder (default work_dirs/gpu_check/out)
#   WORK    work dirs of the runs (default work_dirs/gpu_check)
#   SEEDS   training seeds (default "0 1 2"), data seed 0 (the CPU table's)
#   SMOKE=1 a rehearsal on any machine (a CPU too): plan 2 + 2 + 2, one
#           seed, the toy model in the benchmark; checks the script, not
#           the numbers
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-python3}
WORK=${WORK:-work_dirs/gpu_check}
OUT=${OUT:-$WORK/out}
SEEDS=${SEEDS:-0 1 2}
mkdir -p "$OUT" "$WORK"
export PYTHONUNBUFFERED=1
DEVICE=$($PY -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")')
PLAN=()  # the shipped plan of configs/sign/sign_toy.py
BENCH=(configs/sign/sign_voc.py --batch-size 8 --crop 368 368
       --sizes 512x512 1024x2048 --warmup 2 --repeats 5)
if [ "${SMOKE:-0}" = 1 ]; then
  PLAN=(--cfg-options custom_hooks.0.stages.0.iters=2 \
    custom_hooks.0.stages.1.iters=2 custom_hooks.0.stages.1.block_iters=1 \
    custom_hooks.0.stages.2.iters=2); SEEDS=0
  BENCH=(configs/sign/sign_toy.py --batch-size 2 --crop 64 64
         --sizes 64x64 --warmup 0 --repeats 1)
fi

install() {
  if $PY -c 'import mmcv, mmcv.ops, mmengine, mmseg, gensim, mmseg_sign' \
      2>/dev/null; then
    echo "[gpu_check] already installed"
  else
    local args=()
    [ -n "${WHEELS:-}" ] && args=(--no-index --find-links "$WHEELS")
    $PY -m pip install -q "${args[@]}" 'setuptools<81' wheel ninja
    if ! $PY -c 'import mmcv.ops' 2>/dev/null; then
      # mmcv's CPU ops (SIGN needs no CUDA op; as the earlier H100 runs)
      MMCV_WITH_OPS=1 MAX_JOBS=$(nproc) $PY -m pip install -q \
        --no-build-isolation "${args[@]}" mmcv==2.1.0
    fi
    $PY -m pip install -q "${args[@]}" -e .
  fi
  $PY - <<'PY' | tee "$OUT/versions.txt"
import mmcv, mmengine, mmseg, torch, mmseg_sign  # noqa
from mmseg_sign.engine.optim_wrappers.mixed_precision import \
    cpu_supports_bf16
cuda = torch.cuda.is_available()
print(f'torch {torch.__version__}, mmcv {mmcv.__version__}, mmengine '
      f'{mmengine.__version__}, mmseg {mmseg.__version__}')
if cuda:
    print(f'GPU {torch.cuda.get_device_name()}, bf16 '
          f'{torch.cuda.is_bf16_supported(including_emulation=False)}, '
          f'TF32 matmul {torch.backends.cuda.matmul.allow_tf32}, '
          f'TF32 cuDNN {torch.backends.cudnn.allow_tf32}')
else:
    print(f'CPU only; oneDNN bf16 kernels: {cpu_supports_bf16()}')
PY
}

toy() {  # toy PRECISION
  amp=()
  [ "$1" != float32 ] && amp=(--amp-dtype "$1")
  $PY tools/toy_table.py configs/sign/sign_toy.py "${amp[@]}" --seeds $SEEDS \
    --data-seeds 0 "${PLAN[@]}" --work-dir "$WORK/toy" \
    | tee "$OUT/toy_table.md"
  cp "$WORK/toy/results.json" "$OUT/toy_results.json"
}

bench() {
  for dtype in float32 float16 bfloat16; do
    [ -s "$OUT/bench_$dtype.md" ] && continue
    amp=()
    [ "$dtype" != float32 ] && amp=(--amp-dtype "$dtype")
    $PY tools/analysis/benchmark.py "${BENCH[@]}" --device "$DEVICE" \
      "${amp[@]}" > "$WORK/bench_$dtype.log" 2>&1 \
      || { tail -20 "$WORK/bench_$dtype.log"; return 1; }
    grep -E '^(torch|\|)' "$WORK/bench_$dtype.log" > "$OUT/bench_$dtype.md"
    cat "$OUT/bench_$dtype.md"
  done
}

case "${1:-all}" in
  install) install ;;
  toy) toy "${2:?toy needs a precision: float32, float16 or bfloat16}" ;;
  bench) bench ;;
  all) install; for p in float32 float16 bfloat16; do toy $p; done; bench ;;
  *) echo "usage: $0 [install | toy float32|float16|bfloat16 | bench | all]" >&2
     exit 2 ;;
esac
