#!/usr/bin/env bash
# The GPU checks of docs/gpu.md in ONE call of a GPU machine that has no
# package index (~8 minutes on one H100 / H200, 16 cores):
#
#   bash tools/analysis/gpu_check.sh               # on the GPU machine
#   SMOKE=1 bash tools/analysis/gpu_check.sh       # rehearsal on a CPU
#                  (each step small: plans of 2 + 2 + 2, parity on a batch
#                  of 2, one benchmark size)
#
#   0. install: the carried wheels (WHEELS) into SITE, no network, unless
#      mmseg imports already; the versions and TF32 settings
#   1. parity: tools/analysis/parity.py, every loss and gradient of every
#      stage on one fixed model and batch: cpu:float64 (reference),
#      cpu:float32, cuda:float32 (TF32 off) and cuda:float32:tf32
#   2. one seed, one start: the toy, all stages, data seed 0, seeds SEEDS
#      (default 0-9), in fp32 on the GPU and the same seeds on this
#      machine's CPU at once (a seed starts from the same weights on both:
#      RandomSourcesHook), then the paired difference GPU - CPU of the
#      harmonic mIoU after transfer and after AST with its 95 % CI
#      (tools/toy_table.py --compare); PRECISIONS="float16 bfloat16" adds
#      the toy in mixed precision on the GPU if time is left
#   3. speed: tools/analysis/benchmark.py in fp32 / fp16 / bf16, the GPU
#      otherwise idle, if time is left (BUDGET); fp32 with --profile (each
#      training row's time by module)
#
# Results in OUT, three files (a device tool may bring back only a few):
# report.md (versions, steps, the toy tables, speed, parity: rewritten
# after every step, so a call cut short still has what it finished),
# toy.json (every toy run: toy_table.py's results.json, for --report-only)
# and parity.json; pip.log only if the install failed. The parts of
# report.md are kept in WORK/report.
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
#   SEEDS   training seeds (default 0-9)
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
SEEDS=${SEEDS:-0-9}
[ "$SMOKE" = 1 ] && SEEDS=0-1  # the rehearsal: two seeds
BUDGET=${BUDGET:-560}
mkdir -p "$OUT" "$WORK/report"
WORK=$(cd "$WORK" && pwd); OUT=$(cd "$OUT" && pwd)
R=$WORK/report  # report.md's parts
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
limit() { local l=$(( $(left) - ${1:-20} )); echo $(( l > 10 ? l : 10 )); }
# Every step runs under `timeout`, which puts itself and the step in a
# process group of their own: a signal to this script would not reach
# them. So each one is remembered and stopped with the script (timeout
# passes the signal on to its whole group: toy_table's training runs
# too), and a step in the foreground is waited for with `wait`, which a
# signal interrupts (a foreground command would delay the trap).
PIDS=()
bounded() {  # bounded SECONDS COMMAND...: timeout, stopped with the script
  timeout "$@" & PIDS+=($!); wait $!
}
stop_steps() {
  local p; for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
}
trap 'stop_steps; exit 143' INT TERM
report() {  # OUT/report.md from the parts there are so far
  local f title
  { echo "# gpu_check.sh ($(git rev-parse --short HEAD 2>/dev/null))"
    for f in versions.txt steps.txt toy_gpu_vs_cpu.md toy_float16.md \
        toy_bfloat16.md bench_float32.md bench_float16.md \
        bench_bfloat16.md parity.md; do
      [ -s "$R/$f" ] || continue
      title=${f%.*}; echo; echo "## $title"; echo
      case $f in *.txt) echo '```'; cat "$R/$f"; echo '```';;
                 *) sed 's/^## /### /' "$R/$f";; esac
    done; } > "$OUT/report.md"
  [ -f "$WORK/toy/results.json" ] && cp "$WORK/toy/results.json" "$OUT/toy.json"
}
trap 'stop_steps; report' EXIT
if [ ! -f "$DATA/class_embeddings.npz" ]; then
  echo "error: DATA=$DATA holds no toy data (class_embeddings.npz); make" \
    "it on a machine with gensim: python tools/make_toy_dataset.py --out" \
    "$DATA --val-size 96 96 --seed 0" | tee -a "$R/steps.txt" >&2
  exit 1
fi
step() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$R/steps.txt"; report; }

# ---------------------------------------------------------------- 0. install
if ! $PY -c 'import mmcv.ops, mmengine, mmseg' 2>/dev/null; then
  $PY -m pip install -q --no-index --no-deps --no-compile --target "$SITE" \
    "$WHEELS"/*.whl > "$R/pip.log" 2>&1 || {
    cp "$R/pip.log" "$OUT/"; step "pip failed"; exit 1; }
  export PYTHONPATH=$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
# the versions, and (one interpreter start: each costs seconds) whether
# there is a GPU and how many seeds SEEDS names, into $WORK/facts
FACTS=$WORK/facts SEEDS=$SEEDS $PY - <<'PY' 2>&1 | tee "$R/versions.txt"
import os
import mmcv, mmcv.ops, mmengine, mmseg, torch, mmseg_sign  # noqa
from mmseg_sign.analysis.stats import parse_seeds
cuda = torch.cuda.is_available()
print(f'torch {torch.__version__}, mmcv {mmcv.__version__}, mmengine '
      f'{mmengine.__version__}, mmseg {mmseg.__version__}')
print(f'GPU {torch.cuda.get_device_name()}, TF32 cuDNN '
      f'{torch.backends.cudnn.allow_tf32}, TF32 matmul '
      f'{torch.backends.cuda.matmul.allow_tf32}' if cuda else 'no GPU')
seeds = sum(len(parse_seeds(a)) for a in os.environ['SEEDS'].split())
with open(os.environ['FACTS'], 'w') as f:
    f.write(f'{int(cuda)} {seeds}\n')
PY
[ "${PIPESTATUS[0]}" = 0 ] && read -r GPU NSEEDS < "$WORK/facts" || exit 1
DEV=cpu; [ "$GPU" = 1 ] && DEV=cuda
step "installed ($DEV)"

TOY=configs/sign/sign_toy.py
PLAN=(); TAG=  # the shipped plan: 600 + 400 + 400
PARITY_BATCH=8
BENCH=(configs/sign/sign_voc.py --batch-size 8 --crop 368 368
       --sizes 512x512 1024x2048 --warmup 2 --repeats 5)
if [ "$SMOKE" = 1 ]; then
  PLAN=(train_cfg.stages.0.iters=2 train_cfg.stages.1.iters=2
        train_cfg.stages.1.block_iters=1 train_cfg.stages.2.iters=2
        default_hooks.checkpoint.interval=2)
  TAG=+smoke
  PARITY_BATCH=2
  BENCH=(configs/sign/sign_toy.py --batch-size 2 --crop 64 64 --sizes 64x64
         --warmup 0 --repeats 1)
fi

# ----------------------------------------------------------------- 1. parity
SETTINGS=(cpu:float64 cpu:float32)
[ "$GPU" = 1 ] && SETTINGS+=(cuda:float32 cuda:float32:tf32)
[ "$GPU" = 1 ] || SETTINGS+=(cpu:float64)  # the CPU's self-check
mkdir -p "$WORK/parity"
mkdir -p "$WORK/toy"  # the layout toy_table.py uses
[ -d "$WORK/toy/data0" ] || cp -r "$DATA" "$WORK/toy/data0"
D0=$WORK/toy/data0
DATA_OPTS=(model.decode_head.class_embeddings=$D0/class_embeddings.npz
           train_dataloader.dataset.data_root=$D0
           val_dataloader.dataset.data_root=$D0
           test_dataloader.dataset.data_root=$D0)
OMP_NUM_THREADS=4 bounded 150 $PY tools/analysis/parity.py $TOY \
  --settings "${SETTINGS[@]}" --batch-size $PARITY_BATCH \
  --out "$WORK/parity/parity.json" --force \
  --cfg-options "${DATA_OPTS[@]}" > "$R/parity.md" 2> "$WORK/parity.log"
step "parity rc=$?"
cp "$WORK/parity/parity.json" "$OUT/parity.json" 2>/dev/null

# ------------------------------------------- 2. one seed, one start: GPU vs CPU
# The toy (data seed 0, SEEDS) on the GPU in fp32 and, at the same time, the
# same seeds on this machine's CPU (CUDA_VISIBLE_DEVICES=, runs tagged cpu):
# a seed starts from the same weights on both (RandomSourcesHook), so the
# pairs differ by what the devices compute and draw. Then the paired
# difference GPU - CPU with its 95 % CI (toy_table.py --compare).
opts=(); [ ${#PLAN[@]} -gt 0 ] && opts=(--cfg-options "${PLAN[@]}")
T2=$WORK/toy; mkdir -p "$T2"
[ -d "$T2/data0" ] || cp -r "$DATA" "$T2/data0"
GTAG=(); CTAG=(--tag cpu); C=sign_toy+cpu; S=sign_toy  # runs' names
[ -n "$TAG" ] && { GTAG=(--tag smoke); CTAG=(--tag cpu-smoke);
  C=sign_toy+cpu-smoke; S=sign_toy+smoke; }
if [ "$GPU" = 1 ]; then
  OMP_NUM_THREADS=1 timeout $(limit 30) $PY tools/toy_table.py $TOY \
    --seeds $SEEDS --data-seeds 0 --jobs $NSEEDS "${opts[@]}" \
    "${GTAG[@]}" --work-dir "$T2" > "$WORK/toy_gpu.log" 2>&1 &
  PIDS+=($!)
fi
CUDA_VISIBLE_DEVICES= OMP_NUM_THREADS=1 timeout $(limit 30) $PY \
  tools/toy_table.py $TOY --seeds $SEEDS --data-seeds 0 --jobs $NSEEDS \
  "${opts[@]}" "${CTAG[@]}" --work-dir "$T2" > "$WORK/toy_cpu.log" 2>&1 &
PIDS+=($!)
step "toy: GPU and CPU started"
wait
step "toy: GPU and CPU done"
ROWS=("CPU=$C@self_train" "CPU after transfer=$C@transfer")
CMP=()
# the GPU rows where a GPU run was stored (a GPU half cut by its time limit
# stores none: the CPU rows are reported alone, not an error)
if [ "$GPU" = 1 ] && grep -q "\"$S/0/" "$T2/results.json" 2>/dev/null; then
  ROWS+=("GPU=$S@self_train" "GPU after transfer=$S@transfer")
  CMP=(--compare GPU CPU --compare "GPU after transfer" "CPU after transfer")
elif [ "$GPU" = 1 ]; then
  step "toy: no GPU run stored (see $WORK/toy_gpu.log); CPU rows alone"
fi
$PY tools/toy_table.py $TOY --report-only --seeds $SEEDS --data-seeds 0 \
  "${opts[@]}" "${CTAG[@]}" --work-dir "$T2" --rows "${ROWS[@]}" \
  "${CMP[@]}" --out "$R/toy_gpu_vs_cpu.md" --force 2>&1 | tee "$WORK/toy_report.log"
step "toy report rc=${PIPESTATUS[0]}"

# 2b. mixed precision on the GPU (PRECISIONS, e.g. "float16 bfloat16";
# default none: the 9-minute call is the pairing above)
for P in ${PRECISIONS:-}; do
  [ "$GPU" = 1 ] || break
  [ "$(left)" -lt 200 ] && { step "no time left for the toy in $P"; break; }
  OMP_NUM_THREADS=1 bounded $(limit 30) $PY tools/toy_table.py $TOY \
    --amp-dtype $P --seeds $SEEDS --data-seeds 0 --jobs $NSEEDS \
    "${opts[@]}" "${GTAG[@]}" --work-dir "$T2" \
    --out "$R/toy_$P.md" --force > "$WORK/toy_$P.log" 2>&1
  step "toy $P rc=$?"
done

# ------------------------------------------------------------------ 3. speed
for P in float32 float16 bfloat16; do
  [ -s "$R/bench_$P.md" ] && continue
  [ "$(left)" -lt 90 ] && { step "no time left for bench $P"; break; }
  amp=(); [ $P != float32 ] && amp=(--amp-dtype $P)
  # fp32 also says where each training row's time goes, module by module
  prof=(); [ $P = float32 ] && prof=(--profile)
  OMP_NUM_THREADS=8 bounded $(limit 10) $PY tools/analysis/benchmark.py \
    "${BENCH[@]}" --device $DEV "${amp[@]}" "${prof[@]}" \
    > "$WORK/bench_$P.log" 2>&1
  step "bench $P rc=$?"
  grep -E '^(torch|\|)|per iteration \(self time' "$WORK/bench_$P.log" \
    | sed -E 's/^(.* per iteration \(self time.*)$/\n\1\n/' \
    > "$R/bench_$P.md"
  [ "$GPU" = 1 ] || break  # the rehearsal: fp32 only
done
step end
