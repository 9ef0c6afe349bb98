#!/usr/bin/env bash
# The Table-1 comparison on CamVid (tools/analysis/camvid_lite0_campaign.sh) on a GPU
# machine, in the last of the warm calls that carried the data there
# (docs/gpu.md, "CamVid on the GPU machine"):
#
#   call 1: carry .gpu/wheels .gpu/data0 .gpu/xfer/part0; install the
#           wheels into SITE, copy the part to XFER (and gpu_check.sh,
#           started with setsid, runs on meanwhile)
#   call 2: carry .gpu/xfer/part1; copy it to XFER
#   call 3: carry .gpu/xfer/part2; copy it to XFER, then this script:
#
#   PYTHONPATH=SITE:$PWD BUDGET=540 bash tools/analysis/gpu_camvid_lite0.sh
#   SMOKE=1 bash tools/analysis/gpu_camvid_lite0.sh   # rehearsal on a CPU
#
# It writes the photographs back (tools/analysis/camvid_transport.py
# unpack: every one checked against its original's pixels), waits for a
# gpu_check.sh still running (at most WAIT seconds), then trains the rows'
# configs over SEEDS, JOBS at once, seed by seed (tools/toy_table.py: a
# finished run is kept in WORK/results.json) until BUDGET, and leaves in
# OUT: results.json (every finished run, for --report-only), table.md (the
# rows and paired differences so far), progress.txt (each run's last
# logged iteration: how far the unfinished ones got, and their speed).
#
# Environment: PY (python3), XFER (/tmp/xfer: the carried parts), WORK
# (work_dirs/gpu_camvid_lite0), OUT ($OUT or WORK/out), BUDGET (540 s),
# JOBS (8), SEEDS (0-4), WAIT (240 s).
set -uo pipefail
cd "$(dirname "$0")/../.."
T0=$(date +%s)
PY=${PY:-python3}
SMOKE=${SMOKE:-0}
XFER=${XFER:-/tmp/xfer}
WORK=${WORK:-work_dirs/gpu_camvid_lite0}
[ "$SMOKE" = 1 ] && WORK=$WORK-smoke
OUT=${OUT:-$WORK/out}
BUDGET=${BUDGET:-540}
JOBS=${JOBS:-8}
SEEDS=${SEEDS:-0-4}
WAIT=${WAIT:-240}
mkdir -p "$WORK" "$OUT"
export PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
say() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/progress.txt"; }

CONFIGS=(configs/sign/sign_lite0_camvid-480x360.py
         configs/baselines/zs3net_lite0_camvid-480x360_st.py
         configs/baselines/cagnet_lite0_camvid-480x360_st.py
         configs/baselines/spnet_lite0_camvid-480x360.py
         configs/sign/sign_lite0_camvid-480x360_st.py)
TRAIN=("${CONFIGS[@]}") OPTS=()
if [ "$SMOKE" = 1 ]; then  # SIGN, two iterations a stage
  TRAIN=("${CONFIGS[0]}"); SEEDS=0; JOBS=1
  OPTS=(--tag smoke --cfg-options train_cfg.stages.0.iters=2
        train_cfg.stages.1.iters=2 train_cfg.stages.1.block_iters=1
        train_cfg.stages.2.iters=2 default_hooks.checkpoint.interval=2
        val_dataloader.dataset.indices=2)
fi

# ------------------------------------------------------------ the data
if [ ! -d data/camvid_480x360/img_dir/train ]; then
  $PY tools/analysis/camvid_transport.py unpack "$XFER" \
    data/camvid_480x360 data/embeddings 2>&1 | tee -a "$OUT/progress.txt" \
    || { say "unpack failed"; exit 1; }
fi
say "data: $(ls data/camvid_480x360/img_dir/train | wc -l) train," \
  "$(ls data/camvid_480x360/img_dir/val | wc -l) val photographs"

# ------------------------------------- a gpu_check.sh of call 1 goes first
while pgrep -f tools/analysis/gpu_check.sh > /dev/null &&
    [ $(( $(date +%s) - T0 )) -lt "$WAIT" ]; do sleep 5; done
say "gpu_check.sh $(pgrep -f tools/analysis/gpu_check.sh > /dev/null &&
  echo 'still running' || echo 'not running')"

# -------------------------------------------------------------- the runs
progress() {  # each run's last logged iteration
  local d
  for d in "$WORK"/*_seed*; do
    [ -d "$d" ] || continue
    echo "$(basename "$d"): $(grep -h 'Iter(train)' "$d"/*/*.log 2>/dev/null \
      | tail -1 | sed 's/.*Iter(train) *//' | cut -c1-120)"
  done > "$OUT/runs.txt"
  [ -f "$WORK/results.json" ] && cp "$WORK/results.json" "$OUT/"
}
( while sleep 10; do progress; done ) & WATCH=$!
trap 'kill $WATCH 2>/dev/null; progress' EXIT
say "training ${#TRAIN[@]} configs x seeds $SEEDS, $JOBS at once"
OMP_NUM_THREADS=1 timeout $(( $(left) - 25 )) $PY tools/toy_table.py \
  "${TRAIN[@]}" --data config --seeds $SEEDS --jobs "$JOBS" \
  "${OPTS[@]}" --work-dir "$WORK" > "$WORK/toy_table.log" 2>&1
say "toy_table rc=$?"
progress
T=""; [ "$SMOKE" = 1 ] && T=+smoke
$PY tools/toy_table.py "${CONFIGS[@]}" --data config --seeds $SEEDS \
  "${OPTS[@]}" --work-dir "$WORK" --report-only --rows \
  "SPNet=spnet_lite0_camvid-480x360$T@end" \
  "ZS3=zs3net_lite0_camvid-480x360_st$T@transfer" \
  "ZS3 + ST=zs3net_lite0_camvid-480x360_st$T@self_train" \
  "CaGNet=cagnet_lite0_camvid-480x360_st$T@transfer" \
  "CaGNet + ST=cagnet_lite0_camvid-480x360_st$T@self_train" \
  "SIGN=sign_lite0_camvid-480x360$T@transfer" \
  "SIGN + ST=sign_lite0_camvid-480x360_st$T@self_train" \
  "SIGN + AST=sign_lite0_camvid-480x360$T@self_train" \
  --compare SIGN ZS3 --compare SIGN CaGNet \
  --compare 'SIGN + AST' 'ZS3 + ST' --compare 'SIGN + AST' 'CaGNet + ST' \
  --compare 'SIGN + AST' 'SIGN + ST' --out "$OUT/table.md" --force \
  > "$WORK/report.log" 2>&1
say "report rc=$? (table.md)"
