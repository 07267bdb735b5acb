#!/usr/bin/env bash
# The PMBS study across systems (docs/PMBS.md, "Performance portability"):
# one grid, compute-emulated at a GPU-like ratio of compute to link, on
# several emulated clusters, each in K interleaved sittings with the
# step-time model's prediction beside every run; then the portability
# report over the systems.
#
#   scripts/pmbs_portability.sh --out DIR [options]
#
# 1. DIR/grid.txt: the reduced grid (every stage and gradient path, bucket
#    5e8, overlap off) at micro-batches 4 and 12, plus the bucket and overlap
#    axis (bucket 2e4, overlap off and on) for stage 2's DeepSpeed default and
#    per-owner paths; every point compute-emulated (scripts/pmbs_grid.sh
#    --emulate).
# 2. For each system NxG:RATE, scripts/pmbs_cluster.sh into DIR/NxG-RATE:
#    commbench, the grid in K sittings, the report with predictions. Weak
#    scaling: every rank trains the same sequences per step on every system
#    (train.global_batch_tokens = W x sequences per rank x T), so micro-batch
#    4 is three micro-steps per step and 12 is one, at every W.
# 3. zerotrain report --portability DIR/<each system> --out DIR.
#
# Options:
#   --systems "NxG:RATE ..."   (default "4x1:100mbit 8x1:100mbit 2x2:200mbit
#                              2x4:400mbit 3x1:200mbit")
#   --repeat K                 sittings per system (default 3)
#   --steps N                  train.steps per run (default 10; the first is not timed)
#   --emulate MS,OPT           ms per sequence of a micro-step, ms of the whole
#                              model's optimizer step (default 31.9,3.3; the
#                              derivation is in docs/PMBS.md)
#   --sequences-per-rank S     per step (default 12)
#   --set KEY=VALUE            override for every run (repeatable), e.g. data paths
#   --only REGEX               only the matching points
#   --bin PATH                 zerotrain (default $ZT_BIN or build/zerotrain)
# Root only (network namespaces). Resumable: finished runs are kept.
set -u
die() {
  echo "pmbs_portability.sh: $*" >&2
  exit 2
}
out="" systems="4x1:100mbit 8x1:100mbit 2x2:200mbit 2x4:400mbit 3x1:200mbit" repeat=3 steps=10
emulate=31.9,3.3 per_rank=12 only="" sets=()
bin=${ZT_BIN:-build/zerotrain}
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || die "$1 needs a value"
  case "$1" in
    --out) out=$2 ;;
    --systems) systems=$2 ;;
    --repeat) repeat=$2 ;;
    --steps) steps=$2 ;;
    --emulate) emulate=$2 ;;
    --sequences-per-rank) per_rank=$2 ;;
    --set) sets+=(--set "$2") ;;
    --only) only=$2 ;;
    --bin) bin=$2 ;;
    *) die "unknown option '$1' (see the header of $0)" ;;
  esac
  shift 2
done
[ -n "$out" ] || die "--out DIR is required"
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die "--repeat: expected a positive integer, got '$repeat'"
[[ "$per_rank" =~ ^[1-9][0-9]*$ ]] || die "--sequences-per-rank: expected a positive integer, got '$per_rank'"
[ -x "$bin" ] || die "$bin: no zerotrain binary (build it, or pass --bin)"
for s in $systems; do
  [[ "$s" =~ ^[1-9][0-9]*x[1-9][0-9]*:[0-9]+[kmg]?bit$ ]] || die "--systems: expected NxG:RATE (e.g. 4x1:100mbit), got '$s'"
done
here=$(dirname "$0")
mkdir -p "$out" || die "$out: cannot create"

grid=$out/grid.txt
if [ ! -s "$grid" ]; then
  base=configs/pmbs/cpu_base.yaml
  {
    "$here/pmbs_grid.sh" --config "$base" --buckets 5e8 --overlap false --micro-batches "4 12" \
      --emulate "$emulate" || exit 2
    "$here/pmbs_grid.sh" --buckets 2e4 --overlap "false true" --micro-batches 4 --stages 2 \
      --emulate "$emulate" | grep -E '^s2-(ds_default|per_owner)-' || exit 2
  } >"$grid.tmp" && mv "$grid.tmp" "$grid" || die "$grid: cannot write the grid"
fi
seq_len=$(awk '/^ *seq_len:/ { print $2; exit }' configs/pmbs/cpu_base.yaml)

dirs=()
for s in $systems; do
  shape=${s%%:*} rate=${s#*:}
  nodes=${shape%x*} rpn=${shape#*x}
  dir=$out/$shape-$rate
  dirs+=("$dir")
  echo "=== system $shape at $rate: $dir"
  cmd=("$here/pmbs_cluster.sh" --cluster "$shape" --link "$rate" --out "$dir" --grid "$grid"
    --steps "$steps" --repeat "$repeat" --bin "$bin"
    --set "train.global_batch_tokens=$((nodes * rpn * per_rank * seq_len))" "${sets[@]}")
  [ -z "$only" ] || cmd+=(--only "$only")
  "${cmd[@]}" || die "system $shape at $rate failed (its runs are kept; rerun to resume)"
done

echo "=== portability over ${#dirs[@]} systems"
"$bin" report --portability "${dirs[@]}" --out "$out"
