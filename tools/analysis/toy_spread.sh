#!/usr/bin/env bash
# Where the toy's run-to-run spread comes from (docs/toy_results.md, "Where
# the spread comes from"): the shipped toy config on toy data seed 0, one
# source of randomness varied at a time, every other one held at seed 0.
#
#   bash tools/analysis/toy_spread.sh [WORK_DIR] [extra toy_table.py args]
#
#   all    training seeds 0-9: every source varies (the protocol's runs)
#   init   the initial weights alone (RandomSourcesHook init_seed 0-7)
#   data   data order and augmentation alone (randomness.seed 0-7, the
#          initial weights and the model's draws held at seed 0)
#   draws  the model's own draws alone: z, dropout, MMD pixel samples,
#          transfer's sampled labels (RandomSourcesHook draws_seed 0-7)
#   eval   no training: the sd of each run's score over 1000 resamples of
#          the 50 test images (GZSLIoUMetric(bootstrap=1000), logged by
#          every run above)
#
# init, data and draws share their seed-0 run's settings (everything at
# seed 0), so those three runs must agree to the bit: a check of the
# decomposition itself. Runs already in WORK_DIR/results.json are kept, so
# the script can be stopped and started again.
set -euo pipefail
cd "$(dirname "$0")/../.."
WD=${1:-work_dirs/toy_protocol}
shift || true
PY=${PY:-python}
TOY=configs/sign/sign_toy.py
H=default_hooks.sign_random
run() { $PY tools/toy_table.py $TOY --data-seeds 0 --jobs 2 --work-dir "$WD" \
  "$@"; }
echo "== all sources (training seeds 0-9)"
run --seeds 0-9 "$@"
echo "== initial weights alone"
run --seeds 0-7 --tag init --seed-key $H.init_seed \
  --cfg-options randomness.seed=0 $H.draws_seed=0 "$@"
echo "== data order and augmentation alone"
run --seeds 0-7 --tag data --cfg-options $H.init_seed=0 $H.draws_seed=0 "$@"
echo "== the model's draws alone"
run --seeds 0-7 --tag draws --seed-key $H.draws_seed \
  --cfg-options randomness.seed=0 $H.init_seed=0 "$@"
echo "== the decomposition (sd over the runs of each source, per stage end)"
rows=()
for src in all init data draws; do
  stem=sign_toy; [ $src = all ] || stem=sign_toy+$src
  for stage in train transfer self_train; do
    rows+=("$src@$stage=$stem@$stage")
  done
done
run --seeds 0-9 --report-only --rows "${rows[@]}" "$@"
