#!/usr/bin/env bash
# Tensor parallelism's cost on one machine (docs/parallel_grid.md, "Tensor
# parallelism on one node"), measured: a GPT-2 350M-shaped block (width 1024,
# 16 heads, sequence 1024, micro-batch 4, byte vocabulary) trained at T = 1 on
# one rank, at T = 2 on two (its all-reduces through shared memory) and at
# T = 2 with sequence parallelism, the three interleaved K times; then one
# table.
#
#   scripts/tp_overhead.sh OUT_DIR [--repeat K] [--steps S] [--layers L] [--zt BIN]
#
# The table: scripts/tp_overhead_table.py. Times are wall clock: the machine
# should be otherwise idle; T = 2 needs two cores (T = 1's one rank runs two
# BLAS threads on them: the same cores either way).
set -euo pipefail
out=${1:?usage: scripts/tp_overhead.sh OUT_DIR [--repeat K] [--steps S] [--layers L] [--zt BIN]}
shift
repeat=3 steps=4 layers=1 zt=build/zerotrain
while [ $# -gt 0 ]; do
  case $1 in
    --repeat) repeat=$2 ;;
    --steps) steps=$2 ;;
    --layers) layers=$2 ;;
    --zt) zt=$2 ;;
    *) echo "tp_overhead.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
for v in repeat steps layers; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "tp_overhead.sh: --$v: expected a positive integer, got '${!v}'" >&2; exit 2; }
done
[ "$steps" -ge 3 ] || { echo "tp_overhead.sh: --steps: expected at least 3 (the first is left out of the median)" >&2; exit 2; }
data=${ZT_DATA_DIR:-build/data/kjv}
ls "$data"/train_*.bin >/dev/null 2>&1 || { echo "tp_overhead.sh: no corpus in $data (make data, or set ZT_DATA_DIR)" >&2; exit 2; }
common=(--set "data.train=$data/train_*.bin" --set "data.val=$data/val_*.bin" --set data.tokenizer=byte
  --set model.vocab_size=256 --set model.n_layer="$layers" --set model.n_embd=1024 --set model.n_head=16
  --set model.seq_len=1024 --set train.micro_batch=4 --set train.global_batch_tokens=4096
  --set train.steps="$steps" --set train.eval_every=0 --set train.sample_every=0
  --set train.checkpoint_every=0 --set zero.stage=0)
mkdir -p "$out"
for rep in $(seq 1 "$repeat"); do
  for case in t1 t2 t2sp; do
    tensor=${case:1:1}
    sequence=false
    [ "$case" = t2sp ] && sequence=true
    dir=$out/$case/run$rep
    mkdir -p "$(dirname "$dir")"
    mpirun --allow-run-as-root --oversubscribe -np "$tensor" "$zt" train configs/tiny.yaml --run-dir "$dir" \
      "${common[@]}" --set parallel.tensor="$tensor" --set parallel.sequence_parallel="$sequence" \
      >"$dir.log" 2>&1 || { echo "tp_overhead.sh: $case run $rep failed: $dir.log" >&2; exit 1; }
    echo "$case run $rep done"
  done
done
/usr/bin/python3 scripts/tp_overhead_table.py "$out" "$layers"

