#!/usr/bin/env bash
# Choosing SIGN's KL weight on CamVid's held-out training photographs
# (docs/camvid.md, "A SIGN whose latent code carries the class"): the Lite0
# recipe trained on splits/train_fit.txt (313 photographs) and validated
# on splits/train_held-out.txt (54), never on val or test (test_split=None:
# nothing is scored on the test photographs). Each KL weight with the
# released transfer (z ~ N(0, I)) and with the SIM's latent of the batch's
# real pixels (the latent-posterior config, which starts from the first
# one's train stage); then the latent probe of each run's train-stage end
# (is z informative?). Runs are kept in WORK/results.json; a repeated call
# skips them and continues a killed one.
#   bash tools/analysis/camvid_latent_choice.sh [WORK] [SEEDS...]
# PLAN: the stage lengths' --cfg-options (default: the train stage cut to
# 400 iterations with its poly decay, as the earlier KL-weight runs of
# docs/camvid.md; PLAN= for the recipe's 1200 + 400 + 400).
# ALPHAS: the KL weights (default 100,1,0.01; 100 is the recipe's).
set -u
cd "$(dirname "$0")/../.."
WORK=${1:-work_dirs/camvid_latent_choice}; shift || true
SEEDS=${*:-0 1}
PY=${PY:-.venv/bin/python}
ALPHAS=${ALPHAS:-100,1,0.01}
PLAN=${PLAN-train_cfg.stages.0.iters=400 param_scheduler.segmentor.0.end=400}
# a checkpoint every CKPT iterations: at the train stage's end (the shared
# start of the posterior runs, and the probe's) and where a killed run
# continues from
CKPT=${CKPT:-400}
C=configs/sign
CONFIGS=("$C/sign_lite0_camvid-480x360.py"
         "$C/ablations/sign_lite0_camvid-480x360_latent-posterior.py")
HELD_OUT=(train_dataloader.dataset.ann_file=splits/train_fit.txt
  val_dataloader.dataset.ann_file=splits/train_held-out.txt
  val_dataloader.dataset.data_prefix.img_path=img_dir/train
  val_dataloader.dataset.data_prefix.seg_map_path=ann_dir/train
  test_split=None)
# the latent probe scores the held-out photographs too
PROBE=(test_dataloader.dataset.ann_file=splits/train_held-out.txt
  test_dataloader.dataset.data_prefix.img_path=img_dir/train
  test_dataloader.dataset.data_prefix.seg_map_path=ann_dir/train)
KEY=model.decode_head.loss_kld_weight
read -r -a PLAN_OPTIONS <<< "$PLAN"
TABLE=(tools/toy_table.py "${CONFIGS[@]}" --data config --seeds $SEEDS
  --work-dir "$WORK" --sweep "$KEY=$ALPHAS"
  --cfg-options "${HELD_OUT[@]}" "${PLAN_OPTIONS[@]}")
echo "[$(date +%T)] seeds $SEEDS, $KEY in $ALPHAS"
rc=0
$PY "${TABLE[@]}" --jobs 2 --checkpoint-interval "$CKPT" || rc=$?
# each run's z and mu probed at the train stage's end (the posterior
# config's runs share it with the first config's)
IFS=, read -r -a VALUES <<< "$ALPHAS"
for s in $SEEDS; do
  for a in "${VALUES[@]}"; do
    RUN="$WORK/sign_lite0_camvid-480x360+loss_kld_weight${a}_seed$s"
    END=$($PY -c "import sys
from mmseg_sign.analysis.run_records import config_as_run
from mmseg_sign.analysis.toy_configs import stage_ends
print(stage_ends(config_as_run(sys.argv[1]))['train'])" "$RUN" 2>/dev/null)
    if [ -z "$END" ] || [ ! -f "$RUN/iter_$END.pth" ]; then
      echo "[$(date +%T)] $RUN: no train-stage checkpoint (not trained yet)"
      continue
    fi
    echo "[$(date +%T)] alpha $a, seed $s: the latent probe at iteration $END"
    $PY tools/analysis/latent_probe.py "$C/sign_lite0_camvid-480x360.py" \
      "$RUN/iter_$END.pth" --cfg-options "$KEY=$a" "${PROBE[@]}" || rc=$?
  done
done
# the held-out table: each variant after transfer and after AST, each
# paired with the recipe (the first KL weight, z ~ N(0, I) at transfer)
S=sign_lite0_camvid-480x360
ROWS=() COMPARE=()
for a in "${VALUES[@]}"; do
  for v in "noise:$S" "posterior:${S}_latent-posterior"; do
    name=${v%%:*} stem=${v#*:}
    for stage in transfer:T self_train:AST; do
      label="alpha $a, $name, ${stage#*:}"
      ROWS+=("$label=$stem+loss_kld_weight$a@${stage%%:*}")
      recipe="alpha ${VALUES[0]}, noise, ${stage#*:}"
      [ "$label" != "$recipe" ] && COMPARE+=(--compare "$label" "$recipe")
    done
  done
done
$PY "${TABLE[@]}" --report-only --rows "${ROWS[@]}" "${COMPARE[@]}" \
  --out "$WORK/table.md" --force || exit $?
echo "[$(date +%T)] done: $WORK/table.md"
exit "$rc"
