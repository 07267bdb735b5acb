#!/usr/bin/env bash
# Tensor groups inside a node against across nodes, measured: on emulated
# clusters (scripts/cluster.sh), trains the same model with parallel.tensor
# T in tensor-inner and data-inner rank order, and without tensor
# parallelism, K sittings interleaved; then prints the table of
# docs/parallel_grid.md ("Measured: the rank order") from the summaries.
#
#   scripts/grid_rank_order.sh OUT_DIR [--repeat K] [--link RATE] [--steps S] [--zt BIN]
#
# Systems: 2 x 2 (T = 2) and 2 x 4 (T = 2 and 4), ZeRO stage 1, configs/tiny.yaml
# with 8192 tokens per step (16 micro-batches of 4 x 128),
# on the byte-level corpus (make data), real compute.
set -euo pipefail
out=${1:?usage: scripts/grid_rank_order.sh OUT_DIR [--repeat K] [--link RATE] [--steps S] [--zt BIN]}
shift
repeat=2 link=200mbit steps=8 zt=build/zerotrain
while [ $# -gt 0 ]; do
  case $1 in
    --repeat) repeat=$2 ;;
    --link) link=$2 ;;
    --steps) steps=$2 ;;
    --zt) zt=$2 ;;
    *) echo "grid_rank_order.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
data=${ZT_DATA_DIR:-build/data/kjv}
[ -e "$data/train_000.bin" ] || ls "$data"/train_*.bin >/dev/null 2>&1 ||
  { echo "grid_rank_order.sh: no corpus in $data (make data, or set ZT_DATA_DIR)" >&2; exit 2; }
common=(--set "data.train=$data/train_*.bin" --set "data.val=$data/val_*.bin" --set data.tokenizer=byte
  --set model.vocab_size=256 --set train.eval_every=0 --set train.sample_every=0
  --set train.checkpoint_every=0 --set train.grad_clip=0 --set train.steps="$steps" --set zero.stage=1
  --set train.global_batch_tokens=8192)
mkdir -p "$out"
for rep in $(seq 1 "$repeat"); do
  for system in 2x2 2x4; do
    nodes=${system%x*} per=${system#*x}
    cases=("t1 1 tensor-inner" "t2-tensor-inner 2 tensor-inner" "t2-data-inner 2 data-inner")
    [ "$per" -ge 4 ] && cases+=("t4-tensor-inner 4 tensor-inner" "t4-data-inner 4 data-inner")
    for c in "${cases[@]}"; do
      read -r name tensor order <<<"$c"
      dir=$out/$system/$name/sitting$rep
      mkdir -p "$(dirname "$dir")"
      scripts/cluster.sh --prefix ztg- run --timeout 900 --nodes "$nodes" --ranks-per-node "$per" \
        --link "$link" -- "$zt" train configs/tiny.yaml --run-dir "$dir" "${common[@]}" \
        --set parallel.tensor="$tensor" --set parallel.rank_order="$order" >"$dir.log" 2>&1 ||
        { echo "grid_rank_order.sh: $system $name sitting $rep failed: $dir.log" >&2; exit 1; }
      echo "$system $name sitting $rep done"
    done
  done
done
/usr/bin/python3 scripts/grid_rank_order_table.py "$out" "$link"
