# Activation recompute end to end: every train.recompute level trains to the
# same losses, byte for byte, as none, on 2 ranks at stage 3 (whose gatherer
# sees the recomputed forward inside the backward); summary.json's
# activations per micro-batch equals the formula, shrinks level by level, and
# `plan` prints the same number; a bad level is a one-line config error.
. "$(dirname "$0")/../support/e2e_lib.sh"
run() {  # LEVEL
  mpirun -np 2 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/$1" "${SMALL[@]}" \
    --set train.steps=4 --set zero.stage=3 --set zero.stage3_param_persistence_threshold=0 \
    --set train.recompute="$1" >"$WORK/$1.txt" 2>&1 || { cat "$WORK/$1.txt"; fail "recompute $1: train exited $?"; }
}
field() { grep -o "\"$2\": *[0-9]*" "$WORK/$1/summary.json" | grep -o '[0-9]*$'; }
previous=
for level in none attn mlp block; do
  run "$level"
  [ "$(losses "$WORK/$level/metrics.jsonl" | wc -l)" -eq 4 ] || fail "recompute $level: 4 losses expected"
  if [ "$level" != none ]; then
    cmp -s <(losses "$WORK/none/metrics.jsonl") <(losses "$WORK/$level/metrics.jsonl") ||
      fail "recompute $level: losses differ from none: $(losses "$WORK/$level/metrics.jsonl" | tr '\n' ' ')"
  fi
  measured=$(field "$level" activations_per_micro_batch)
  formula=$(field "$level" activations_per_micro_batch_formula)
  [ -n "$measured" ] && [ "$measured" = "$formula" ] ||
    fail "recompute $level: activations measured '$measured', formula '$formula'"
  grep -q "\"recompute\": *\"$level\"" "$WORK/$level/summary.json" || fail "summary.json lacks recompute $level"
  [ -z "$previous" ] || [ "$measured" -lt "$previous" ] ||
    fail "recompute $level: $measured activation bytes, not below the previous level's $previous"
  previous=$measured
  "$ZT_BIN" plan configs/tiny.yaml --world 2 "${SMALL[@]}" --set train.recompute="$level" \
    >"$WORK/plan_$level.txt" 2>&1 || { cat "$WORK/plan_$level.txt"; fail "plan exited $?"; }
  grep -q "^activations: $measured bytes per micro-batch of 2 x 64 per rank (train.recompute: $level)" \
    "$WORK/plan_$level.txt" || fail "plan: $(grep '^activations' "$WORK/plan_$level.txt")"
  echo "recompute $level: $measured activation bytes per micro-batch, losses $(losses "$WORK/$level/metrics.jsonl" | tr '\n' ' ')"
done
"$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/bad" "${SMALL[@]}" --set train.recompute=full \
  >"$WORK/bad.txt" 2>&1
rc=$?
[ "$rc" -eq 2 ] || { cat "$WORK/bad.txt"; fail "recompute full: exit $rc, expected 2"; }
grep -q "train.recompute.*expected one of none, attn, mlp, block, got 'full'" "$WORK/bad.txt" ||
  fail "recompute full: $(cat "$WORK/bad.txt")"
[ ! -e "$WORK/bad/summary.json" ] || fail "recompute full: a summary was written"
echo "PASS recompute"
