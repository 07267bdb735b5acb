#!/usr/bin/env bash
# GPT-2 training throughput on the GPU (BENCHMARKS.md's shapes: T = 1024, bf16,
# random tokens). Each row trains STEPS steps of one micro-batch and reads the
# run's summary.json: tok/s over the timed steps (all but the first), the median
# step, TFLOP/s = tok/s x (6N + 6 L C T) FLOPs per token, MFU against the
# 790 TFLOP/s dense bf16 measured on the H200, and the peak of the allocator's
# ledger. Usage: scripts/bench.sh [BUILD_DIR]; STEPS=N and ROWS="..." override.
set -u
BUILD=${1:-build}
BIN=$BUILD/zerotrain
STEPS=${STEPS:-12}
PEAK_TFLOPS=790
OUT_DIR=$BUILD/bench
DATA=$OUT_DIR/data/random_000.bin
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT_DIR/data"
[ -x "$BIN" ] || { echo "bench: $BIN not built (run make first)" >&2; exit 1; }

if [ ! -s "$DATA" ]; then  # 8M uniform random GPT-2 token ids, llm.c shard format
  python3 - "$DATA" <<'PY' || { echo "bench: cannot write $DATA" >&2; exit 1; }
import os, struct, sys
import numpy as np
n = 8 * 1024 * 1024
tokens = np.random.default_rng(1234).integers(0, 50257, size=n, dtype=np.uint16)
with open(sys.argv[1] + ".tmp", "wb") as f:
    f.write(struct.pack("<256i", 20240520, 1, n, *([0] * 253)))
    f.write(tokens.tobytes())
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
PY
fi

# label config micro_batch stage [extra --set ...]
ROWS=${ROWS:-"124M:gpt2-124m:16:0 124M:gpt2-124m:32:0 124M:gpt2-124m:32:3 350M:gpt2-350m:32:0"}
results=()
for row in $ROWS; do
  IFS=: read -r label cfg B stage <<<"$row"
  run="$OUT_DIR/${label}_B${B}_stage${stage}"
  extra=()
  [ "$stage" = 3 ] && extra=(--set system.communicator=nccl)
  rm -rf "$run"
  if ! timeout 150 "$BIN" train "configs/$cfg.yaml" --run-dir "$run" \
      --set "data.train=$DATA" --set "data.val=$DATA" --set system.device=cuda \
      --set "train.micro_batch=$B" --set "train.global_batch_tokens=$((B * 1024))" \
      --set "train.steps=$STEPS" --set train.warmup_steps=2 --set train.eval_every=0 \
      --set train.sample_every=0 --set train.checkpoint_every=0 --set "zero.stage=$stage" \
      "${extra[@]}" >"$run.log" 2>&1; then
    results+=("$label|$B|$stage|FAILED: $(tail -1 "$run.log")")
    continue
  fi
  results+=("$(python3 - "$run/summary.json" "$label" "$B" "$stage" "$PEAK_TFLOPS" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
m = s["config"]["model"]
L, C, T = m["n_layer"], m["n_embd"], m["seq_len"]
flops_per_token = 6 * s["params"] + 6 * L * C * T
tflops = s["tokens_per_second"] * flops_per_token / 1e12
peak_gib = s["memory"]["peak_total"] / 2**30
print("%s|%s|%s|%.0f|%.1f|%.1f|%.1f%%|%.1f GiB|%s" % (sys.argv[2], sys.argv[3], sys.argv[4],
      s["tokens_per_second"], s["step_ms_median"], tflops, 100 * tflops / float(sys.argv[5]),
      peak_gib, s["zero"]["grad_path"]))
PY
)")
done

printf '\n%-6s %4s %6s %10s %9s %9s %7s %14s %s\n' model B stage "tok/s" "ms/step" "TFLOP/s" MFU \
  "peak (ledger)" "grad path"
for r in "${results[@]}"; do
  IFS='|' read -r a b c d e f g h i <<<"$r"
  printf '%-6s %4s %6s %10s %9s %9s %7s %14s %s\n' "$a" "$b" "$c" "$d" "$e" "$f" "$g" "$h" "$i"
done
echo "tok/s over steps 2..$STEPS of T = 1024 random tokens; TFLOP/s = tok/s x (6N + 6LCT); MFU vs $PEAK_TFLOPS TFLOP/s"
echo "mode: deterministic (every kernel; zerotrain has no non-deterministic variant)"
