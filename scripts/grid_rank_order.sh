#!/usr/bin/env bash
# The grid's placement, measured: on emulated clusters (scripts/cluster.sh),
# trains the same model over the same ranks in several grids, K sittings
# interleaved; then prints a table of docs/parallel_grid.md from the
# summaries.
#   --study tensor (default): parallel.tensor T in tensor-inner and
#     data-inner rank order against no tensor parallelism ("Measured: the
#     tensor group inside a node or across nodes").
#   --study pipeline: parallel.pipeline P (stages across nodes: the pipeline
#     is the outermost dimension), alone, under GPipe, and with T = 2 inside
#     a node, against data parallelism alone (docs/pipeline.md, "Measured").
#
#   scripts/grid_rank_order.sh OUT_DIR [--study tensor|pipeline] [--repeat K] [--link RATE]
#                              [--steps S] [--emulate MS] [--zt BIN]
#
# --emulate MS: compute emulated (docs/compute_emulation.md), MS per whole-model
# micro-step and MS/5 per optimizer step (a tensor shard or a pipeline stage
# waits its share and makes the real one's calls).
#
# Per system, once before the sittings, the curves report's predictions take
# (each file kept when present, so a rerun into OUT_DIR reuses them):
#   commbench.json: commbench over the whole world, for data parallelism
#     alone (t1, report --network);
#   tensor-curves-tT.json: commbench --group-size T, every tensor group
#     calling at once (report --tensor-curves);
#   data-curves-dD-sT.json: commbench --group-size D --group-stride T, every
#     data-parallel group of a grid with T tensor ranks calling at once
#     (report --data-curves).
#
# Systems: 2 x 2 and 2 x 4, ZeRO stage 1, configs/tiny.yaml with 8192 tokens
# per step (16 micro-batches of 4 x 128), on the byte-level corpus (make
# data), real compute.
set -euo pipefail
out=${1:?usage: scripts/grid_rank_order.sh OUT_DIR [--study tensor|pipeline] [--repeat K] [--link RATE] [--steps S] [--emulate MS] [--zt BIN]}
shift
study=tensor repeat=2 link=200mbit steps=8 zt=build/zerotrain emulate=
while [ $# -gt 0 ]; do
  case $1 in
    --study) study=$2 ;;
    --emulate) emulate=$2 ;;
    --repeat) repeat=$2 ;;
    --link) link=$2 ;;
    --steps) steps=$2 ;;
    --zt) zt=$2 ;;
    *) echo "grid_rank_order.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
case $study in tensor | pipeline) ;; *) echo "grid_rank_order.sh: --study: expected tensor or pipeline, got '$study'" >&2; exit 2 ;; esac
data=${ZT_DATA_DIR:-build/data/kjv}
[ -e "$data/train_000.bin" ] || ls "$data"/train_*.bin >/dev/null 2>&1 ||
  { echo "grid_rank_order.sh: no corpus in $data (make data, or set ZT_DATA_DIR)" >&2; exit 2; }
common=(--set "data.train=$data/train_*.bin" --set "data.val=$data/val_*.bin" --set data.tokenizer=byte
  --set model.vocab_size=256 --set train.eval_every=0 --set train.sample_every=0
  --set train.checkpoint_every=0 --set train.grad_clip=0 --set train.steps="$steps" --set zero.stage=1
  --set train.global_batch_tokens=8192)
if [ -n "$emulate" ]; then
  common+=(--set system.compute=emulate --set system.emulate_micro_step_ms="$emulate"
    --set system.emulate_optimizer_ms="$(/usr/bin/python3 -c "print($emulate / 5)")")
fi
# The cases of a system of $1 ranks per node: name, tensor, rank order,
# pipeline, schedule.
cases_of() {
  if [ "$study" = pipeline ]; then
    cases=("t1 1 tensor-inner 1 1f1b" "p2 1 tensor-inner 2 1f1b" "p2-gpipe 1 tensor-inner 2 gpipe"
      "t2p2 2 tensor-inner 2 1f1b")
    if [ "$1" -ge 4 ]; then cases+=("p4 1 tensor-inner 4 1f1b"); fi
  else
    cases=("t1 1 tensor-inner 1 1f1b" "t2-tensor-inner 2 tensor-inner 1 1f1b"
      "t2-data-inner 2 data-inner 1 1f1b")
    if [ "$1" -ge 4 ]; then
      cases+=("t4-tensor-inner 4 tensor-inner 1 1f1b" "t4-data-inner 4 data-inner 1 1f1b")
    fi
  fi
}
mkdir -p "$out"
# measure SYSTEM FILE COMMBENCH_ARGS...: commbench on the system's cluster into FILE, once.
measure() {
  local system=$1 file=$2
  shift 2
  [ -s "$file" ] && return 0
  scripts/cluster.sh --prefix ztg- run --timeout 400 --nodes "${system%x*}" \
    --ranks-per-node "${system#*x}" --link "$link" -- "$zt" commbench \
    --primitives all_reduce,all_gather --min-bytes 4 --max-bytes 4M --max-seconds 2 "$@" \
    --out "$file" >"${file%.json}.log" 2>&1 ||
    { echo "grid_rank_order.sh: $system commbench $* failed: ${file%.json}.log" >&2; exit 1; }
}
for system in 2x2 2x4; do
  nodes=${system%x*} per=${system#*x}
  mkdir -p "$out/$system"
  measure "$system" "$out/$system/commbench.json"
  cases_of "$per"
  for c in "${cases[@]}"; do
    read -r _ tensor _ pipeline _ <<<"$c"
    data=$((nodes * per / (tensor * pipeline)))
    if [ "$tensor" -gt 1 ]; then
      measure "$system" "$out/$system/tensor-curves-t$tensor.json" --group-size "$tensor"
    fi
    if [ "$data" -gt 1 ] && [ "$data" -lt $((nodes * per)) ]; then
      measure "$system" "$out/$system/data-curves-d$data-s$tensor.json" --group-size "$data" \
        --group-stride "$tensor"
    fi
  done
done
for rep in $(seq 1 "$repeat"); do
  for system in 2x2 2x4; do
    nodes=${system%x*} per=${system#*x}
    cases_of "$per"
    for c in "${cases[@]}"; do
      read -r name tensor order pipeline schedule <<<"$c"
      dir=$out/$system/$name/sitting$rep
      mkdir -p "$(dirname "$dir")"
      scripts/cluster.sh --prefix ztg- run --timeout 900 --nodes "$nodes" --ranks-per-node "$per" \
        --link "$link" -- "$zt" train configs/tiny.yaml --run-dir "$dir" "${common[@]}" \
        --set parallel.tensor="$tensor" --set parallel.rank_order="$order" \
        --set parallel.pipeline="$pipeline" --set parallel.pipeline_schedule="$schedule" >"$dir.log" 2>&1 ||
        { echo "grid_rank_order.sh: $system $name sitting $rep failed: $dir.log" >&2; exit 1; }
      echo "$system $name sitting $rep done"
    done
  done
done
/usr/bin/python3 scripts/grid_rank_order_table.py "$out" "$link" "$study" "$zt"
