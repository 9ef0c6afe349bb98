#!/usr/bin/env bash
# The GPU checks of docs/gpu.md in ONE call of a GPU machine that has no
# package index (~8 minutes on one H100 / H200, 16 cores):
#
#   bash tools/analysis/gpu_check.sh               # on the GPU machine
#   SMOKE=1 bash tools/analysis/gpu_check.sh       # rehearsal on a CPU
#
#   0. install: the carried wheels (WHEELS) into SITE, no network, unless
#      mmseg imports already; the versions and TF32 settings
#   1. parity: tools/analysis/parity.py, every loss and gradient of every
#      stage on one fixed model and batch: cpu:float64 (reference),
#      cpu:float32, cuda:float32 (TF32 off) and cuda:float32:tf32
#   2. the toy, all stages, data seed 0, seeds SEEDS, in fp32, fp16 and
#      bf16 at once (tools/toy_table.py, one table per precision; in fp32
#      also sign_toy_cpu-randomness.py: initialised and drawing on the CPU,
#      so it differs from a CPU run only by the GPU's kernels), and
#      beside it the hybrid: C_s = the whole plan on the CPU; GC_s = the
#      GPU fp32 run's train-stage checkpoint resumed on the CPU (transfer
#      + AST); CG_s = C_s's resumed on the GPU
#   3. speed: tools/analysis/benchmark.py in fp32 / fp16 / bf16, the GPU
#      otherwise idle, if time is left (BUDGET)
#
# Results (small files) in OUT: steps.txt, versions.txt, parity.md /
# parity_*.json, toy_<dtype>.md / .json, hybrid.md / .json, bench_<dtype>.md.
# Rehearsal and real runs never share a work folder: SMOKE=1 works in
# WORK-smoke. Each step that finds its results already there skips them
# (toy_table.py's results.json), so a call cut short is simply repeated.
#
# Environment:
#   PY      python with a CUDA build of torch (default python3)
#   WHEELS  folder of the wheels to install (default .gpu/wheels: mmcv
#           2.1.0 built for that python and torch, mmengine 0.10.7,
#           mmsegmentation 1.2.2 and what they need; no gensim)
#   DATA    toy data of seed 0 made on a CPU machine (default .gpu/data0:
#           `python tools/make_toy_dataset.py --out .gpu/data0
#           --val-size 96 96 --seed 0`), since gensim is not there
#   SITE    install target (default /tmp/gpu_check_site)
#   OUT     results (default $OUT if set, else WORK/out)
#   WORK    runs (default work_dirs/gpu_check)
#   SEEDS   training seeds (default "0 1 2")
#   BUDGET  seconds this call may take in all (default 560)
set -uo pipefail
cd "$(dirname "$0")/../.."
T0=$(date +%s)
PY=${PY:-python3}
SMOKE=${SMOKE:-0}
WORK=${WORK:-work_dirs/gpu_check}
[ "$SMOKE" = 1 ] && WORK=$WORK-smoke
OUT=${OUT:-$WORK/out}
WHEELS=${WHEELS:-.gpu/wheels}
DATA=${DATA:-.gpu/data0}
SITE=${SITE:-/tmp/gpu_check_site}
SEEDS=${SEEDS:-0 1 2}
BUDGET=${BUDGET:-560}
mkdir -p "$OUT" "$WORK"
WORK=$(cd "$WORK" && pwd); OUT=$(cd "$OUT" && pwd)
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
limit() { local l=$(( $(left) - ${1:-20} )); echo $(( l > 10 ? l : 10 )); }
step() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/steps.txt"; }

# ---------------------------------------------------------------- 0. install
if ! $PY -c 'import mmcv.ops, mmengine, mmseg' 2>/dev/null; then
  $PY -m pip install -q --no-index --no-deps --no-compile --target "$SITE" \
    "$WHEELS"/*.whl > "$OUT/pip.log" 2>&1 || { step "pip failed"; exit 1; }
  export PYTHONPATH=$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
$PY - <<'PY' 2>&1 | tee "$OUT/versions.txt" || exit 1
import mmcv, mmcv.ops, mmengine, mmseg, torch, mmseg_sign  # noqa
cuda = torch.cuda.is_available()
print(f'torch {torch.__version__}, mmcv {mmcv.__version__}, mmengine '
      f'{mmengine.__version__}, mmseg {mmseg.__version__}')
print(f'GPU {torch.cuda.get_device_name()}, TF32 cuDNN '
      f'{torch.backends.cudnn.allow_tf32}, TF32 matmul '
      f'{torch.backends.cuda.matmul.allow_tf32}' if cuda else 'no GPU')
PY
GPU=$($PY -c 'import torch; print(int(torch.cuda.is_available()))')
DEV=cpu; [ "$GPU" = 1 ] && DEV=cuda
step "installed ($DEV)"

TOY=configs/sign/sign_toy.py
CPU_DRAWS=configs/sign/ablations/sign_toy_cpu-randomness.py
PLAN=(); RES=600; END=1000; TAG=  # the shipped plan: 600 + 200 + 200
BENCH=(configs/sign/sign_voc.py --batch-size 8 --crop 368 368
       --sizes 512x512 1024x2048 --warmup 2 --repeats 5)
if [ "$SMOKE" = 1 ]; then
  PLAN=(custom_hooks.0.stages.0.iters=2 custom_hooks.0.stages.1.iters=2
        custom_hooks.0.stages.1.block_iters=1 custom_hooks.0.stages.2.iters=2
        default_hooks.checkpoint.interval=2)
  RES=2; END=6; SEEDS=0; TAG=+smoke
  BENCH=(configs/sign/sign_toy.py --batch-size 2 --crop 64 64 --sizes 64x64
         --warmup 0 --repeats 1)
fi

# ----------------------------------------------------------------- 1. parity
SETTINGS=(cpu:float64 cpu:float32)
[ "$GPU" = 1 ] && SETTINGS+=(cuda:float32 cuda:float32:tf32)
[ "$GPU" = 1 ] || SETTINGS+=(cpu:float64)  # the CPU's self-check
mkdir -p "$WORK/parity"
for P in float32 float16 bfloat16; do  # the layout toy_table.py uses
  [ -d "$WORK/toy_$P/data0" ] || { mkdir -p "$WORK/toy_$P" &&
    cp -r "$DATA" "$WORK/toy_$P/data0"; }
done
D0=$WORK/toy_float32/data0
DATA_OPTS=(model.decode_head.class_embeddings=$D0/class_embeddings.npz
           train_dataloader.dataset.data_root=$D0
           val_dataloader.dataset.data_root=$D0
           test_dataloader.dataset.data_root=$D0)
OMP_NUM_THREADS=4 timeout 150 $PY tools/analysis/parity.py $TOY \
  --settings "${SETTINGS[@]}" --out "$WORK/parity/parity.json" \
  --cfg-options "${DATA_OPTS[@]}" > "$OUT/parity.md" 2> "$WORK/parity.log"
step "parity rc=$?"
cp "$WORK/parity/parity.json" "$OUT/parity.json" 2>/dev/null

# ------------------------------------------------------ 2. toy and hybrid
for P in float32 float16 bfloat16; do
  amp=(); [ $P != float32 ] && amp=(--amp-dtype $P)
  [ "$GPU" = 1 ] || [ $P = float32 ] || continue  # the rehearsal: fp32
  opts=(); [ ${#PLAN[@]} -gt 0 ] && opts=(--cfg-options "${PLAN[@]}" --tag smoke)
  cfgs=($TOY); jobs=3  # fp32: also initialised and drawing on the CPU
  [ $P = float32 ] && { cfgs+=($CPU_DRAWS); jobs=6; }
  OMP_NUM_THREADS=1 timeout $(limit) $PY tools/toy_table.py "${cfgs[@]}" \
    "${amp[@]}" --seeds $SEEDS --data-seeds 0 --jobs $jobs "${opts[@]}" \
    --work-dir "$WORK/toy_$P" --out "$OUT/toy_$P.md" \
    > "$WORK/toy_$P.log" 2>&1 &
done
H=$WORK/hybrid; mkdir -p "$H"
train() {  # NAME SEED DEVICE [CHECKPOINT to resume]
  local name=$1 seed=$2 dev=$3 extra=()
  [ $# -ge 4 ] && extra=(--resume)
  local more=(); [ $# -ge 4 ] && more=(load_from=$4)
  local envs=(OMP_NUM_THREADS=2)
  [ "$dev" = cpu ] && envs+=(CUDA_VISIBLE_DEVICES=)
  env "${envs[@]}" timeout $(limit) $PY tools/train.py $TOY \
    --work-dir "$H/$name" "${extra[@]}" --cfg-options "${DATA_OPTS[@]}" \
    "${PLAN[@]}" randomness.seed=$seed "${more[@]}" > "$H/$name.log" 2>&1
  echo "$name rc=$?" >> "$OUT/steps.txt"
}
follow() {  # CHECKPOINT NAME SEED DEVICE: resume CHECKPOINT once written
  while [ ! -f "$1" ] && [ "$(left)" -gt 30 ]; do sleep 2; done
  sleep 2; [ -f "$1" ] && train "$2" "$3" "$4" "$1"
}
for s in $SEEDS; do
  [ -f "$H/C$s/iter_$END.pth" ] || { train C$s $s cpu & }
  [ -f "$H/GC$s/iter_$END.pth" ] || follow \
    "$WORK/toy_float32/sign_toy${TAG}_data0_seed$s/iter_$RES.pth" GC$s $s cpu &
  [ -f "$H/CG$s/iter_$END.pth" ] || \
  follow "$H/C$s/iter_$RES.pth" CG$s $s $DEV &
done
step "toy and hybrid started"
wait
step "toy and hybrid done"
$PY - "$H" "$OUT" <<'PY'
import glob, json, os, sys
h, out = sys.argv[1:]
rows = {}
for run in sorted(os.listdir(h)):
    files = sorted(glob.glob(f'{h}/{run}/*/vis_data/scalars.json'))
    recs = [json.loads(line) for f in files for line in open(f)]
    val = {r['step']: round(r['hIoU'], 2) for r in recs if 'hIoU' in r}
    if val:
        rows[run] = val
with open(f'{out}/hybrid.json', 'w') as f:
    json.dump(rows, f, indent=1)
with open(f'{out}/hybrid.md', 'w') as f:
    f.write('| run | harmonic mIoU at each stage end (iteration: hIoU) |\n'
            '|---|---|\n')
    for run, val in rows.items():
        f.write(f'| {run} | {val} |\n')
print(open(f'{out}/hybrid.md').read())
PY
for P in float32 float16 bfloat16; do
  cp "$WORK/toy_$P/results.json" "$OUT/toy_$P.json" 2>/dev/null
done

# ------------------------------------------------------------------ 3. speed
for P in float32 float16 bfloat16; do
  [ -s "$OUT/bench_$P.md" ] && continue
  [ "$(left)" -lt 90 ] && { step "no time left for bench $P"; break; }
  amp=(); [ $P != float32 ] && amp=(--amp-dtype $P)
  OMP_NUM_THREADS=8 timeout $(limit 10) $PY tools/analysis/benchmark.py \
    "${BENCH[@]}" --device $DEV "${amp[@]}" > "$WORK/bench_$P.log" 2>&1
  step "bench $P rc=$?"
  grep -E '^(torch|\|)' "$WORK/bench_$P.log" > "$OUT/bench_$P.md"
  [ "$GPU" = 1 ] || break  # the rehearsal: fp32 only
done
step end
