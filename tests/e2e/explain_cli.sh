# `zerotrain explain`: the path and the switch that chose it, the smallest change reaching the
# paper's volume, the same calls and bytes as `plan --calls` for the same settings, and bad input
# refused with one line and exit 2. About 10 s.
. "$(dirname "$0")/../support/e2e_lib.sh"
MODEL=(--config configs/pmbs/cpu_base.yaml)
ds() {  # FILE ZERO_OPTIMIZATION_JSON [TOP_LEVEL_JSON]
  printf '{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 3,%s
    "zero_optimization": %s}\n' "${3:+ $3,}" "$2" >"$1"
}

# Per primitive, "primitive calls payload" from explain's table, summed over purposes.
explain_totals() {
  awk '/^per rank per optimizer step/ {on = 1; getline; next}
       on && (NF != 8 || $1 == "first") {on = 0}
       on {c[$2] += $4; b[$2] += $5}
       END {for (p in c) print p, c[p], b[p]}' | sort
}
# The same from plan --calls' steady-step list (payload: all_gather and reduce_scatter count W
# pieces, as nccl-tests does).
plan_totals() {  # W
  awk -v W="$1" '/^every collective of a steady step/ {on = 1; getline; next}
       on && NF == 0 {on = 0}
       on {es = ($4 == "fp64" || $4 == "i64") ? 8 : ($4 == "fp32" ? 4 : 2)
           n = $5 * es * (($3 == "all_gather" || $3 == "reduce_scatter") ? W : 1)
           c[$3]++; b[$3] += n}
       END {for (p in c) print p, c[p], b[p]}' | sort
}

ds "$WORK/s2.json" '{"stage": 2}'
out=$("$ZT_BIN" explain "$WORK/s2.json" --world 4 "${MODEL[@]}") || fail "explain stage 2: $out"
printf '%s\n' "$out" | grep -q "^gradient path: multi_rank_allreduce" || fail "stage 2 path: $out"
printf '%s\n' "$out" | grep -q "chosen by: reduce_scatter: true with use_multi_rank_bucket_allreduce: true" ||
  fail "stage 2 reason: $out"
printf '%s\n' "$out" |
  grep -q "reaches the paper's volume: set use_multi_rank_bucket_allreduce: false (per_owner_reduce" ||
  fail "stage 2 smallest change: $out"

# The same calls and bytes as plan for the same settings, stage by stage, path by path.
check_against_plan() {  # NAME W RANKS_PER_NODE ZERO_JSON PLAN_SETS...
  local name=$1 w=$2 g=$3 zero=$4
  shift 4
  ds "$WORK/$name.json" "$zero"
  local e p
  e=$("$ZT_BIN" explain "$WORK/$name.json" --world "$w" --ranks-per-node "$g" "${MODEL[@]}" |
      explain_totals) || fail "$name: explain failed"
  p=$("$ZT_BIN" plan configs/pmbs/cpu_base.yaml --world "$w" --ranks-per-node "$g" --calls "$@" |
      plan_totals "$w") || fail "$name: plan failed"
  [ -n "$e" ] && [ "$e" = "$p" ] || fail "$name: explain and plan differ:
explain: $e
plan:    $p"
  echo "$name: $(echo $e)"
}
check_against_plan s1_mrbafalse_b1e4 4 2 \
  '{"stage": 1, "reduce_bucket_size": 10000, "use_multi_rank_bucket_allreduce": false}' \
  --set zero.stage=1 --set zero.reduce_bucket_size=10000 --set zero.use_multi_rank_bucket_allreduce=false
check_against_plan s2_rsfalse_b2e4_w3 3 3 '{"stage": 2, "reduce_bucket_size": 20000, "reduce_scatter": false}' \
  --set zero.stage=2 --set zero.reduce_bucket_size=20000 --set zero.reduce_scatter=false \
  --set train.global_batch_tokens=4608  # 36 sequences: 4 x 3 micro-steps x 3 ranks
check_against_plan s3_b1e4 4 2 \
  '{"stage": 3, "reduce_bucket_size": 10000, "stage3_param_persistence_threshold": 1000}' \
  --set zero.stage=3 --set zero.reduce_bucket_size=10000

# Stage 3 at the default: below the paper's volume (each unit gathered once per micro-step).
ds "$WORK/s3.json" '{"stage": 3}'
out=$("$ZT_BIN" explain "$WORK/s3.json" --world 4 "${MODEL[@]}") || fail "explain stage 3: $out"
printf '%s\n' "$out" | grep -q "reaches the paper's volume: none needed" || fail "stage 3: $out"

# The example ds_configs in configs/deepspeed/ import without an error, on their own model.
for f in configs/deepspeed/*.json; do
  out=$("$ZT_BIN" explain "$f" --world 4 2>&1) || fail "$f: $out"
done

# Bad input: one line naming the file, key or option, exit 2.
bad() {  # WHAT EXPECTED_TEXT ARGS...
  local what=$1 expect=$2
  shift 2
  local err rc
  err=$("$ZT_BIN" explain "$@" 2>&1 >/dev/null); rc=$?
  [ "$rc" -eq 2 ] || fail "$what: exit $rc: $err"
  [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "$what: not one line: $err"
  printf '%s' "$err" | grep -qF -- "$expect" || fail "$what: '$expect' not in: $err"
}
printf '{"zero_optimization": {"stage": 2, "reduce_bucket_sise": 5}}' >"$WORK/typo.json"
bad "missing file" "$WORK/none.json" "$WORK/none.json" --world 4
bad "unknown key" "zero_optimization.reduce_bucket_sise" "$WORK/typo.json" --world 4 "${MODEL[@]}"
bad "no --world" "--world W is required" "$WORK/s2.json"
bad "--world 0" "--world" "$WORK/s2.json" --world 0
bad "--world abc" "got 'abc'" "$WORK/s2.json" --world abc
bad "--ranks-per-node" "does not divide" "$WORK/s2.json" --world 4 --ranks-per-node 3
bad "--model" "got 'gpt5'" "$WORK/s2.json" --world 4 --model gpt5
bad "--model and --config" "not both" "$WORK/s2.json" --world 4 --model gpt2 --config configs/tiny.yaml
printf '{"train_batch_size": 50, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 3}' \
  >"$WORK/batch.json"
bad "batch sizes" "train_batch_size" "$WORK/batch.json" --world 4 "${MODEL[@]}"
# ZeRO-Infinity: the placement plan prints, from the ds_config's offload blocks.
out=$("$ZT_BIN" explain configs/deepspeed/offload.json --world 8 --ranks-per-node 8 --model gpt2) ||
  fail "explain offload.json: $out"
for want in "zero.offload_optimizer.device nvme, zero.offload_param.device cpu" \
  "per device (rank)              242688       31118976              0         31361664" \
  "B gradients (the shard's, copied as backward finishes them)"; do
  [[ "$out" == *"$want"* ]] || fail "explain offload.json lacks '$want': $(grep -A7 '^offload' <<<"$out")"
done
echo "PASS explain_cli"
