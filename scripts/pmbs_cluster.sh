#!/usr/bin/env bash
# The PMBS reduced grid with time, on an emulated cluster (docs/PMBS.md):
#
#   scripts/pmbs_cluster.sh --cluster NxG --link RATE[,DELAY] --out DIR [options]
#
# 1. commbench on a one-run cluster of that shape -> DIR/commbench.json, with
#    the host figures (commbench --host: copies, host AdamW; files with
#    --host-nvme) the model's offload terms take
# 2. the grid on a cluster of the same shape (scripts/sweep.sh --cluster)
# 3. zerotrain report DIR --network DIR/commbench.json: measured tok/s and
#    speed-ups beside the step-time model's prediction for every run
#
# Options:
#   --grid FILE        the grid (default configs/pmbs/grid_cpu_quick.txt, 11 points)
#   --steps N          train.steps per point (default 10)
#   --repeat K         K sittings, the points interleaved (sweep.sh --repeat)
#   --set KEY=VALUE    override for every point (sweep.sh --set; repeatable)
#   --only REGEX       only the matching points (sweep.sh --only)
#   --max-bytes SIZE   commbench's largest message (default 4M)
#   --host-nvme DIR    also time offload files under DIR (commbench --host-nvme)
#   --bin PATH         zerotrain (default $ZT_BIN or build/zerotrain)
# Root only (network namespaces). Resumable as sweep.sh is; commbench.json is
# measured again only when missing.
set -u
die() {
  echo "pmbs_cluster.sh: $*" >&2
  exit 2
}
spec="" link="" out="" grid=configs/pmbs/grid_cpu_quick.txt steps=10 only="" max_bytes=4M host_nvme=
repeat=1 sets=()
bin=${ZT_BIN:-build/zerotrain}
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || die "$1 needs a value"
  case "$1" in
    --cluster) spec=$2 ;;
    --link) link=$2 ;;
    --out) out=$2 ;;
    --grid) grid=$2 ;;
    --steps) steps=$2 ;;
    --repeat) repeat=$2 ;;
    --set) sets+=(--set "$2") ;;
    --only) only=$2 ;;
    --max-bytes) max_bytes=$2 ;;
    --host-nvme) host_nvme=$2 ;;
    --bin) bin=$2 ;;
    *) die "unknown option '$1' (see the header of $0)" ;;
  esac
  shift 2
done
[[ "$spec" =~ ^([1-9][0-9]*)x([1-9][0-9]*)$ ]] || die "--cluster: expected NxG, got '$spec'"
nodes=${BASH_REMATCH[1]} rpn=${BASH_REMATCH[2]}
[ -n "$link" ] || die "--link RATE is required (e.g. 50mbit)"
[ -n "$out" ] || die "--out DIR is required"
[[ "$steps" =~ ^[1-9][0-9]*$ ]] || die "--steps: expected a positive integer, got '$steps'"
[ -x "$bin" ] || die "$bin: no zerotrain binary (build it, or pass --bin)"
here=$(dirname "$0")
mkdir -p "$out" || die "$out: cannot create"

if [ ! -s "$out/commbench.json" ]; then
  echo "== commbench on $spec at $link"
  host=(--host)
  [ -z "$host_nvme" ] || host=(--host-nvme "$host_nvme")
  "$here/cluster.sh" run --nodes "$nodes" --ranks-per-node "$rpn" --link "$link" -- \
    "$bin" commbench --primitives all --min-bytes 4 --max-bytes "$max_bytes" --max-seconds 2 \
    "${host[@]}" --out "$out/commbench.json" >"$out/commbench.log" 2>&1 ||
    die "commbench failed: $(tail -3 "$out/commbench.log")"
  grep -E '^# .* at .*busbw|^# host' "$out/commbench.log"
fi

echo "== the grid on $spec at $link"
sweep=("$here/sweep.sh" --grid "$grid" --cluster "$spec" --link "$link" --out "$out"
  --set "train.steps=$steps" "${sets[@]}" --repeat "$repeat" --bin "$bin")
[ -z "$only" ] || sweep+=(--only "$only")
"${sweep[@]}"
status=$?

echo "== report"
"$bin" report "$out" --network "$out/commbench.json" || exit 1
exit $status
