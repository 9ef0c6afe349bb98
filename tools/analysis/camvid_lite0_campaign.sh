#!/usr/bin/env bash
# Issue 48's comparison on CamVid with ImageNet features (docs/camvid.md):
# every Table-1 row, training seeds 0-4, seed by seed (a finished seed is a
# paired row for every config), two runs at a time on 2 cores. Runs are
# kept in WORK/results.json as they finish; a repeated call skips them.
#   bash tools/analysis/camvid_lite0_campaign.sh [WORK] [SEEDS...]
set -u
cd "$(dirname "$0")/../.."
WORK=${1:-work_dirs/camvid_lite0}; shift || true
SEEDS=${*:-0 1 2 3 4}
PY=${PY:-.venv/bin/python}
CONFIGS=(configs/sign/sign_lite0_camvid-480x360.py
         configs/baselines/zs3net_lite0_camvid-480x360_st.py
         configs/baselines/cagnet_lite0_camvid-480x360_st.py
         configs/sign/sign_lite0_camvid-480x360_st.py
         configs/baselines/spnet_lite0_camvid-480x360.py)
for s in $SEEDS; do
  echo "[$(date +%T)] seed $s"
  $PY tools/toy_table.py "${CONFIGS[@]}" --data config --seeds "$s" \
    --jobs 2 --work-dir "$WORK" || echo "[$(date +%T)] seed $s: rc=$?"
done
echo "[$(date +%T)] done"
