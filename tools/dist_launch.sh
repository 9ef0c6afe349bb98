#!/usr/bin/env bash
# Usage: bash tools/dist_launch.sh NUM_PROCS SCRIPT [args...]
# Runs tools/SCRIPT in NUM_PROCS processes with torch.distributed.run (one
# per GPU, or per CPU slot with the gloo backend) and `--launcher pytorch`.
# NNODES, NODE_RANK, PORT and MASTER_ADDR as in mmseg's dist_*.sh.
GPUS=$1
SCRIPT=$2
if ! [[ "$GPUS" =~ ^[1-9][0-9]*$ ]]; then
  echo "error: NUM_PROCS must be a positive number of processes (one per" \
    "GPU, or per CPU slot), got '${GPUS}'; usage: bash" \
    "tools/dist_train.sh CONFIG NUM_PROCS [train.py args...]" >&2
  exit 2
fi
NNODES=${NNODES:-1}
NODE_RANK=${NODE_RANK:-0}
PORT=${PORT:-29500}
MASTER_ADDR=${MASTER_ADDR:-"127.0.0.1"}

PYTHONPATH="$(dirname $0)/..":$PYTHONPATH \
python -m torch.distributed.run \
    --nnodes=$NNODES \
    --node_rank=$NODE_RANK \
    --master_addr=$MASTER_ADDR \
    --nproc_per_node=$GPUS \
    --master_port=$PORT \
    "$(dirname "$0")/$SCRIPT" \
    "${@:3}" --launcher pytorch
