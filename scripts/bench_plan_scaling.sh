#!/usr/bin/env bash
# How the planning commands' cost grows with the world size: wall time and peak
# resident memory (both measured, per process, by python3's resource module)
# of `plan` without and with a network file, `explain`, and `report` on a run
# whose summary says it ran at W ranks, for W = 2^0 .. 2^MAX_K (default 20), 8
# ranks per node (fewer below 8). Each point also prints its ratio to the
# previous W's: linear cost doubles, constant cost stays at 1. A series stops
# once a point takes more than CAP_S seconds (default 120), saying so.
# Usage: scripts/bench_plan_scaling.sh [BUILD_DIR]; MAX_K=N and CAP_S=S override.
#
#   plan:    CONFIG (default configs/gpt2-124m.yaml), zero.stage STAGE (default 3),
#            train.global_batch_tokens = micro_batch x seq_len x W (one micro-step)
#   plan+net: the same with --network configs/networks/h100_ib400_8gpu.json
#            --compute-ms 100,10
#   explain: configs/deepspeed/zeropp.json on the gpt2 preset
#   report:  one short CPU run of the small e2e model (stage 2, per_owner_reduce:
#            a rooted reduce per rank), its summary rewritten to W ranks, with
#            --network (report plans and times that one configuration); skipped
#            where the default corpus cannot be built
set -u
BUILD=${1:-build}
BIN=$BUILD/zerotrain
MAX_K=${MAX_K:-20}
CAP_S=${CAP_S:-120}
CONFIG=${CONFIG:-configs/gpt2-124m.yaml}
STAGE=${STAGE:-3}
NET=configs/networks/h100_ib400_8gpu.json
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -x "$BIN" ] || { echo "bench_plan_scaling: $BIN not built (run make first)" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# Runs a command with its output discarded; prints "SECONDS PEAK_RSS_KB" or
# "failed" when it exits non-zero.
measure() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys, time
t0 = time.monotonic()
rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
seconds = time.monotonic() - t0
print("failed" if rc else "%.3f %d" % (seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
PY
}

tokens_per_rank=$(awk '/^ *micro_batch:/ {b = $2} /^ *seq_len:/ {t = $2} END {print b * t}' "$CONFIG")

# The report's run: trained once, its directory copied per W.
report_run=""
if [ -z "${SKIP_REPORT:-}" ]; then
  corpus=$BUILD/data/kjv
  [ -f "$corpus/.complete" ] || scripts/prepare_default_corpus.sh "$BUILD" >/dev/null 2>&1
  if [ -f "$corpus/.complete" ] &&
      "$BIN" train configs/tiny.yaml --run-dir "$WORK/base_run" \
        --set "data.train=$corpus/train_*.bin" --set "data.val=$corpus/val_*.bin" \
        --set data.tokenizer=byte --set model.vocab_size=256 --set model.n_layer=2 \
        --set model.n_embd=64 --set model.seq_len=64 --set train.micro_batch=2 \
        --set train.global_batch_tokens=128 --set train.steps=3 --set train.eval_every=0 \
        --set train.sample_every=0 --set train.checkpoint_every=0 --set zero.stage=2 \
        --set zero.use_multi_rank_bucket_allreduce=false >"$WORK/train.log" 2>&1; then
    report_run=$WORK/base_run
  else
    echo "report: skipped (no default corpus or the run failed; see scripts/prepare_default_corpus.sh)"
  fi
fi

# Writes RUNS_DIR/run/ as the base run at W ranks (G per node).
report_runs_at() {  # W G RUNS_DIR
  mkdir -p "$3" && rm -rf "$3/run" && cp -r "$report_run" "$3/run"
  python3 - "$3/run" "$1" "$2" <<'PY'
import json, re, sys
run, W, G = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = json.load(open(run + "/summary.json"))
tokens = s["config"]["train"]["micro_batch"] * s["config"]["model"]["seq_len"] * W
s["world_size"] = W
s["config"]["train"]["global_batch_tokens"] = tokens
s["comm"]["ranks_per_node"] = G
json.dump(s, open(run + "/summary.json", "w"))
y = open(run + "/config.yaml").read()
y = re.sub(r"(?m)^(\s*global_batch_tokens:).*$", r"\g<1> %d" % tokens, y)
open(run + "/config.yaml", "w").write(y)
PY
}

printf 'bench_plan_scaling: %s, %s, zero.stage %s, %s, %s (%s), cap %s s per point\n' \
  "$BIN" "$CONFIG" "$STAGE" "$(date -u +%Y-%m-%dT%H:%MZ)" "$(uname -n)" "$(nproc) cores" "$CAP_S"
printf '%-9s %8s %10s %12s %13s %13s\n' series W "wall s" "peak RSS MB" "wall ratio" "RSS ratio"
for series in plan plan+net explain report; do
  [ "$series" = report ] && [ -z "$report_run" ] && continue
  prev_s="" prev_kb=""
  for ((k = 0; k <= MAX_K; k++)); do
    W=$((1 << k))
    G=$((W < 8 ? W : 8))
    case $series in
      plan | plan+net)
        cmd=("$BIN" plan "$CONFIG" --world "$W" --ranks-per-node "$G"
             --set "train.global_batch_tokens=$((tokens_per_rank * W))" --set "zero.stage=$STAGE")
        [ "$series" = plan+net ] && cmd+=(--network "$NET" --compute-ms 100,10)
        ;;
      explain)
        cmd=("$BIN" explain configs/deepspeed/zeropp.json --world "$W" --ranks-per-node "$G"
             --model gpt2)
        ;;
      report)
        report_runs_at "$W" "$G" "$WORK/runs"
        cmd=("$BIN" report "$WORK/runs" --out "$WORK/report" --no-plots --network "$NET")
        ;;
    esac
    read -r s kb <<<"$(measure "${cmd[@]}")"
    if [ "$s" = failed ]; then
      echo "$series: W=$W failed: ${cmd[*]}"
      break
    fi
    ratio_s=- ratio_kb=-
    if [ -n "$prev_s" ]; then
      ratio_s=$(awk -v a="$s" -v b="$prev_s" 'BEGIN {printf "x%.2f", a / b}')
      ratio_kb=$(awk -v a="$kb" -v b="$prev_kb" 'BEGIN {printf "x%.2f", a / b}')
    fi
    printf '%-9s %8d %10.2f %12.1f %13s %13s\n' "$series" "$W" "$s" \
      "$(awk -v k="$kb" 'BEGIN {print k / 1024}')" "$ratio_s" "$ratio_kb"
    prev_s=$s prev_kb=$kb
    if awk -v a="$s" -v c="$CAP_S" 'BEGIN {exit !(a > c)}'; then
      echo "$series: stopped after W=$W: $s s is over the cap of $CAP_S s"
      break
    fi
  done
done
echo "(all figures measured; ratios: this W's figure over the previous W's)"
