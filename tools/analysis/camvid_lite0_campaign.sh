#!/usr/bin/env bash
# The Table-1 comparison on CamVid with ImageNet features (docs/camvid.md):
# every Table-1 row, the baselines with SIGN's AST and SIGN's ablations
# (Tables 3-4), training seeds 0-4, seed by seed (a finished seed is a
# paired row for every config), two runs at a time on 2 cores. Runs are
# kept in WORK/results.json as they finish; a repeated call skips them and
# continues a killed run from its last checkpoint (one every 400
# iterations: a run's stage ends, at most ~25 minutes lost on this machine;
# one killed after its training, in its test-split scoring, is only scored).
#   bash tools/analysis/camvid_lite0_campaign.sh [WORK] [SEEDS...]
# DRY_RUN=1: list the runs it would train and where each starts, and stop.
set -u
cd "$(dirname "$0")/../.."
WORK=${1:-work_dirs/camvid_lite0}; shift || true
SEEDS=${*:-0 1 2 3 4}
PY=${PY:-.venv/bin/python}
# The order the runs start in (two at a time): the longest first (SIGN's
# model with its three stages, then its ablations), so that most of a seed
# finishes within a session; a run that starts from another's checkpoint
# at the end of their shared stages (SIGN + ST from SIGN + AST, ZS3 + AST
# from ZS3 + ST, CaGNet + AST from CaGNet + ST: ~1 h of a core saved per
# run) waits for that run to end, while the others start meanwhile
# (toy_table's start_siblings), so no core idles.
ROWS=(configs/sign/sign_lite0_camvid-480x360.py
      configs/sign/ablations/sign_lite0_camvid-480x360_no-sim.py
      configs/sign/ablations/sign_lite0_camvid-480x360_pe-none.py
      configs/sign/ablations/sign_lite0_camvid-480x360_pe-absolute.py
      configs/baselines/cagnet_lite0_camvid-480x360_st.py
      configs/baselines/zs3net_lite0_camvid-480x360_st.py
      configs/baselines/spnet_lite0_camvid-480x360.py
      configs/sign/sign_lite0_camvid-480x360_st.py
      configs/baselines/cagnet_lite0_camvid-480x360_ast.py
      configs/baselines/zs3net_lite0_camvid-480x360_ast.py)
CONFIGS=("${ROWS[@]}")
# ONLY="CONFIG ..." in the environment: train these alone (e.g. the AST rows
# and the runs they start from), in this order; the report reads every row
if [ -n "${ONLY:-}" ]; then
  read -r -a CONFIGS <<< "$ONLY"
fi
# the data every run reads, checked once before any run starts (a run
# without them would fail only in its own training process)
DATA=${DATA:-data/camvid_480x360}
EMBEDDINGS=${EMBEDDINGS:-data/embeddings/camvid10_cagnet_fasttext_word2vec.npz}
for need in "$DATA/img_dir/train" "$DATA/ann_dir/val" "$EMBEDDINGS"; do
  if [ ! -e "$need" ]; then
    echo "error: $need is missing: prepare CamVid at 480x360 and its class" \
      "embeddings first (docs/camvid.md, 'Commands')" >&2
    exit 2
  fi
done
# one call over every seed: toy_table starts the runs seed by seed (all
# rows of a seed before the next seed's), and a core freed by a seed's
# short runs takes the next seed's first run instead of waiting
echo "[$(date +%T)] seeds $SEEDS"
if [ -n "${DRY_RUN:-}" ]; then  # what is left, and where each run starts
  exec $PY tools/toy_table.py "${CONFIGS[@]}" --data config --seeds $SEEDS \
    --jobs 2 --checkpoint-interval 400 --work-dir "$WORK" --dry-run
fi
rc=0
$PY tools/toy_table.py "${CONFIGS[@]}" --data config --seeds $SEEDS \
  --jobs 2 --checkpoint-interval 400 --work-dir "$WORK" || rc=$?
if [ "$rc" != 0 ]; then
  echo "[$(date +%T)] the runs stopped with rc=$rc; the table below holds" \
    "the runs stored so far" >&2
fi
# the table and the paired differences over the runs stored
# so far (a seed that some row lacks is left out of that row's pairs)
S=sign_lite0_camvid-480x360
REPORT=(tools/toy_table.py "${ROWS[@]}"
  configs/baselines/supervised_lite0_camvid-480x360.py --data config
  --seeds $SEEDS --work-dir "$WORK" --report-only --rows
  'Supervised (ceiling)=supervised_lite0_camvid-480x360@end'
  'SPNet=spnet_lite0_camvid-480x360@end'
  'ZS3=zs3net_lite0_camvid-480x360_st@transfer'
  'ZS3 + ST=zs3net_lite0_camvid-480x360_st@self_train'
  'ZS3 + AST=zs3net_lite0_camvid-480x360_ast@self_train'
  'CaGNet=cagnet_lite0_camvid-480x360_st@transfer'
  'CaGNet + ST=cagnet_lite0_camvid-480x360_st@self_train'
  'CaGNet + AST=cagnet_lite0_camvid-480x360_ast@self_train'
  "SIGN=$S@transfer"
  "SIGN + ST=${S}_st@self_train"
  "SIGN + AST=$S@self_train"
  "SIGN no SIM=${S}_no-sim@transfer"
  "SIGN no SIM + AST=${S}_no-sim@self_train"
  "SIGN no PE=${S}_pe-none@transfer"
  "SIGN no PE + AST=${S}_pe-none@self_train"
  "SIGN APE=${S}_pe-absolute@transfer"
  "SIGN APE + AST=${S}_pe-absolute@self_train"
  --compare SIGN ZS3 --compare SIGN CaGNet
  --compare 'SIGN + AST' 'ZS3 + ST' --compare 'SIGN + AST' 'CaGNet + ST'
  --compare 'SIGN + AST' 'SIGN + ST' --compare 'SIGN + ST' 'CaGNet + ST'
  --compare 'SIGN + AST' 'ZS3 + AST' --compare 'SIGN + AST' 'CaGNet + AST'
  --compare 'ZS3 + AST' 'ZS3 + ST' --compare 'CaGNet + AST' 'CaGNet + ST'
  --compare SIGN 'SIGN no SIM' --compare 'SIGN + AST' 'SIGN no SIM + AST'
  --compare SIGN 'SIGN no PE' --compare 'SIGN + AST' 'SIGN no PE + AST'
  --compare SIGN 'SIGN APE' --compare 'SIGN + AST' 'SIGN APE + AST')
# on val (each run's validation at its stage ends), then on CamVid's test
# split (the runs scored on it: those trained since it was added)
$PY "${REPORT[@]}" --out "$WORK/table.md" --force || exit $?
$PY "${REPORT[@]}" --split test --out "$WORK/table_test.md" --force || exit $?
# both in one table (docs/camvid.md's opening): unseen and harmonic mIoU,
# each pair's harmonic difference on val and on test
$PY "${REPORT[@]}" --split val+test --out "$WORK/table_val_test.md" --force \
  || exit $?
echo "[$(date +%T)] done: $WORK/table.md, $WORK/table_test.md," \
  "$WORK/table_val_test.md"
exit "$rc"
