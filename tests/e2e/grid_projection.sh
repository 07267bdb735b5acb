# `zerotrain grid-projection`: on the H100 InfiniBand preset, the header labels every number as
# predicted (model output) and lists the assumptions, the table has a row per (stage, T, P) that
# divides the world, a winner is named; bad input is refused with one line and exit 2. About 2 s.
. "$(dirname "$0")/../support/e2e_lib.sh"
NET=configs/networks/h100_ib400_8gpu.json

out=$("$ZT_BIN" grid-projection --network "$NET" --model 7b --nodes 2) || fail "7b on 2 nodes: $out"
printf '%s\n' "$out" | grep -q "^grid-projection: every number below is predicted (model output)" ||
  fail "no 'predicted (model output)' header: $out"
printf '%s\n' "$out" | grep -q "^assumptions" || fail "no assumptions: $out"
printf '%s\n' "$out" | grep -q "^  - compute: 412 TFLOP/s achieved per GPU" || fail "compute assumption: $out"
printf '%s\n' "$out" | grep -q "^  - device memory: 80 GB per GPU (the preset's)" || fail "memory assumption: $out"
printf '%s\n' "$out" | grep -q "6,658,596,864 parameters (computed from the shape)" ||
  fail "7b's parameter count: $out"
printf '%s\n' "$out" | grep -q "^cluster: 2 nodes x 8 GPUs = 16 GPUs" || fail "cluster line: $out"
printf '%s\n' "$out" | grep -q "^winner (predicted): ZeRO stage [0-3], T = [1248], P = [1248]" ||
  fail "no winner: $out"
# 16 GPUs: every T, P in {1, 2, 4, 8} with T x P dividing 16 (all but 4x8, 8x4, 8x8): 13 pairs x 4 stages.
rows=$(printf '%s\n' "$out" | awk '/^rank stage/ {on = 1; next} on && NF == 0 {exit} on' | wc -l)
[ "$rows" -eq 52 ] || fail "expected 52 rows, got $rows: $out"
# P > 1 at stages 2 and 3 is marked as DeepSpeed's refusal, and still predicted.
printf '%s\n' "$out" | awk '/^rank stage/ {on = 1; next} on && NF == 0 {exit}
  on && $4 > 1 && $2 >= 2 && $NF != "refuses" {bad = 1}
  on && ($4 == 1 || $2 < 2) && $NF != "accepts" {bad = 1} END {exit bad}' ||
  fail "DeepSpeed marks wrong: $out"

# 1.5B (25 heads): only T = 1 can split the heads; the others are named, not predicted.
out=$("$ZT_BIN" grid-projection --network "$NET" --model 1.5b) || fail "1.5b: $out"
printf '%s\n' "$out" | grep -q "^not predicted: T = 2, 4, 8 (every P): T does not divide the 25 heads" ||
  fail "1.5b's T = 2 not named: $out"

# A config's model, restricted to one (T, P).
out=$("$ZT_BIN" grid-projection --network "$NET" --model configs/pmbs/gpt_7b.yaml --tensor 8 \
  --pipeline 1 --global-batch-tokens 65536) || fail "config model: $out"
rows=$(printf '%s\n' "$out" | awk '/^rank stage/ {on = 1; next} on && NF == 0 {exit} on' | wc -l)
[ "$rows" -eq 4 ] || fail "--tensor 8 --pipeline 1: expected 4 rows, got $rows: $out"

# --sequence-parallel: said in the assumptions; every T > 1 row keeps less activation memory
# (Korthikanti's 34/T), T = 1 rows the same; and a T that does not divide the sequence is named.
sp=$("$ZT_BIN" grid-projection --network "$NET" --model 20b --nodes 2 --sequence-parallel) || fail "20b sp: $sp"
plain=$("$ZT_BIN" grid-projection --network "$NET" --model 20b --nodes 2) || fail "20b: $plain"
printf '%s\n' "$sp" | grep -q "^  - tensor: Megatron's sequence parallelism where T > 1" || fail "no sequence-parallel assumption: $sp"
memory_of() {  # OUTPUT STAGE T P -> memory GB of that row
  printf '%s\n' "$1" | awk -v s="$2" -v t="$3" -v p="$4" '/^rank stage/ {on = 1; next} on && NF == 0 {exit}
    on && $2 == s && $3 == t && $4 == p {print $(NF - 2)}'
}
for row in "3 2 1" "0 4 2" "1 8 1"; do
  set -- $row
  less=$(awk -v a="$(memory_of "$sp" "$@")" -v b="$(memory_of "$plain" "$@")" 'BEGIN {print (a > 0 && a < b)}')
  [ "$less" = 1 ] || fail "stage $1, T $2, P $3: $(memory_of "$sp" "$@") GB with sequence parallelism, $(memory_of "$plain" "$@") without"
done
[ "$(memory_of "$sp" 3 1 8)" = "$(memory_of "$plain" 3 1 8)" ] || fail "T = 1 changed with --sequence-parallel"
out=$("$ZT_BIN" grid-projection --network "$NET" --model 7b --seq 1020 --tensor 8 --sequence-parallel) || fail "seq 1020: $out"
printf '%s\n' "$out" | grep -q "^not predicted: T = 8, P = 1: sequence parallelism needs the sequence 1020 to be a multiple of T" ||
  fail "a sequence T does not divide is not named: $out"

expect_error "unknown model" "--model: expected 1.5b, 7b, 20b or a CONFIG.yaml, got '13b'" \
  "$ZT_BIN" grid-projection --network "$NET" --model 13b
expect_error "missing --network" "--network" "$ZT_BIN" grid-projection --model 7b
expect_error "T not dividing the world" "--tensor: 3 does not divide the world 8" \
  "$ZT_BIN" grid-projection --network "$NET" --model 7b --tensor 3
expect_error "T not dividing the heads" "--tensor: 2 does not divide the model's 25 heads" \
  "$ZT_BIN" grid-projection --network "$NET" --model 1.5b --tensor 2
expect_error "not a preset" "expected a network preset" \
  "$ZT_BIN" grid-projection --network docs/pmbs_cluster/4x1-50mbit/commbench.json --model 7b
expect_error "zero nodes" "--nodes" "$ZT_BIN" grid-projection --network "$NET" --model 7b --nodes 0
echo "PASS grid_projection ($expect_error_count bad inputs refused)"
