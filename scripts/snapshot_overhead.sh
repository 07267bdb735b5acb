#!/usr/bin/env bash
# The cost of in-memory snapshots per step (docs/recovery.md, "Snapshot
# overhead"), measured: the same run with train.recovery: none and memory,
# interleaved (the order alternates per repeat), K repeats, at several model
# sizes, on W local MPI ranks; then one table.
#
#   scripts/snapshot_overhead.sh --out DIR [--repeats K] [--world W] [--steps S]
#       [--sizes "small tiny wide"]
#
# Sizes (all stage 0, one micro-step of micro_batch x seq_len per rank per step):
#   small: the e2e model (2 layers x 64, byte vocabulary, seq 64, micro_batch 2)
#   tiny:  configs/tiny.yaml (4 x 128, BPE vocabulary 1024, seq 128, micro_batch 4)
#   wide:  configs/tiny.yaml at n_embd 256
# For each size: the median over the K runs of each run's median step time
# (summary.json's step_ms_median) with and without snapshots, the overhead
# (the median over the repeats of memory / none - 1 within each repeat's pair,
# which ran back to back under the same load), and from the memory runs' summary.json the
# medians of the copy's own time and of the optimizer's wait for it
# (snapshot_copy_ms / snapshot_wait_ms), the wait also as a share of the step.
# Times are wall clock: the machine should be otherwise idle.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "snapshot_overhead.sh: $*" >&2; exit 2; }
out="" repeats=3 world=2 steps=12 sizes="small tiny wide"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --world) world=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    *) die "unknown option '$1'" ;;
  esac
done
[ -n "$out" ] || die "--out DIR is required"
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || die "--repeats: expected a count, got '$repeats'"
[[ "$world" =~ ^[1-9][0-9]*$ ]] || die "--world: expected a rank count, got '$world'"
[[ "$steps" =~ ^[1-9][0-9]*$ ]] && [ "$steps" -ge 4 ] || die "--steps: expected at least 4, got '$steps'"
ZT_BIN=${ZT_BIN:-$here/build/zerotrain}
ZT_DATA_DIR=${ZT_DATA_DIR:-$here/build/data/kjv}
ZT_BPE_DIR=${ZT_BPE_DIR:-$(dirname "$ZT_DATA_DIR")/kjv-bpe}
[ -x "$ZT_BIN" ] || die "no zerotrain at $ZT_BIN (make, or set ZT_BIN)"
mkdir -p "$out" || die "cannot create $out"
cd "$here" || die "cannot enter $here"

size_args() {
  local byte=(--set "data.train=$ZT_DATA_DIR/train_*.bin" --set "data.val=$ZT_DATA_DIR/val_*.bin" --set data.tokenizer=byte)
  local bpe=(--set "data.train=$ZT_BPE_DIR/train_*.bin" --set "data.val=$ZT_BPE_DIR/val_*.bin"
    --set "data.tokenizer=$ZT_BPE_DIR/tokenizer.model" --set train.global_batch_tokens=$((world * 512)))
  case "$1" in
    small) echo configs/tiny.yaml "${byte[@]}" --set model.vocab_size=256 --set model.n_layer=2 --set model.n_embd=64 \
      --set model.seq_len=64 --set train.micro_batch=2 --set train.global_batch_tokens=$((world * 128)) ;;
    tiny) echo configs/tiny.yaml "${bpe[@]}" ;;
    wide) echo configs/tiny.yaml "${bpe[@]}" --set model.n_embd=256 ;;
    *) die "unknown size '$1' (small, tiny, wide)" ;;
  esac
}
COMMON=(--set train.steps="$steps" --set train.eval_every=0 --set train.sample_every=0
  --set train.checkpoint_every=0 --set zero.stage=0 --set system.device=cpu)
for ((k = 1; k <= repeats; k++)); do
  order="none memory"
  [ $((k % 2)) = 0 ] && order="memory none"
  for size in $sizes; do
    read -ra sargs <<<"$(size_args "$size")"
    for mode in $order; do
      dir=$out/$size/$mode-$k
      rm -rf "$dir"
      mpirun -np "$world" "$ZT_BIN" train "${sargs[@]}" "${COMMON[@]}" --set train.recovery="$mode" \
        --run-dir "$dir" >"$out/$size-$mode-$k.log" 2>&1 || die "$size $mode $k failed: $(tail -2 "$out/$size-$mode-$k.log")"
      echo "$size $mode $k: $(grep -o '"step_ms_median": *[0-9.e+-]*' "$dir/summary.json")" >&2
    done
  done
done
/usr/bin/python3 - "$out" $sizes <<'PY'
import json, statistics, sys, glob, os
out, sizes = sys.argv[1], sys.argv[2:]
print("| model | parameters | runs each | step ms, none | step ms, memory | overhead % (median of pairs) | "
      "snapshot_copy_ms | snapshot_wait_ms | wait % of step |")
print("|---|---|---|---|---|---|---|---|---|")
for size in sizes:
    runs = {m: [json.load(open(os.path.join(out, size, f"{m}-{k}", "summary.json")))
                for k in range(1, len(glob.glob(os.path.join(out, size, "none-*"))) + 1)]
            for m in ("none", "memory")}
    # Each repeat's pair ran back to back: the ratio within a pair shares its load.
    pairs = [b["step_ms_median"] / a["step_ms_median"] - 1 for a, b in zip(runs["none"], runs["memory"])]
    none = statistics.median(r["step_ms_median"] for r in runs["none"])
    mem = statistics.median(r["step_ms_median"] for r in runs["memory"])
    copy = statistics.median(r["snapshots"]["copy_ms_median_measured"] for r in runs["memory"])
    wait = statistics.median(r["snapshots"]["wait_ms_median_measured"] for r in runs["memory"])
    print(f"| {size} | {runs['none'][0]['params']} | {len(runs['none'])} | {none:.1f} | {mem:.1f} | "
          f"{100 * statistics.median(pairs):+.1f} | {copy:.2f} | {wait:.3f} | {100 * wait / mem:.3f} |")
PY
