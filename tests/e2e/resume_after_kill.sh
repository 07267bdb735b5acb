# kill -9 in the middle of a run, then --resume: the losses are exactly those of
# an uninterrupted run (W = 1), and likewise at W = 2 with stage 2; a W = 2
# checkpoint also loads at W = 3 (re-sharded) and trains on.
. "$(dirname "$0")/../support/e2e_lib.sh"
ARGS=("${SMALL[@]}" --set train.steps=8 --set train.checkpoint_every=2)

"$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/full" "${ARGS[@]}" >/dev/null 2>&1 || fail "full run"
"$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/cut" "${ARGS[@]}" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 600); do
  [ -e "$WORK/cut/checkpoints/step_00000004/COMPLETE" ] && break
  sleep 0.05
done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
[ -e "$WORK/cut/checkpoints/step_00000004/COMPLETE" ] || fail "no checkpoint before the kill"
"$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/cut" --resume "${ARGS[@]}" >"$WORK/resume.txt" 2>&1 ||
  fail "resume failed: $(tail -2 "$WORK/resume.txt")"
grep -q "resumed from" "$WORK/resume.txt" || fail "did not resume"
diff <(losses "$WORK/full/metrics.jsonl") <(losses "$WORK/cut/metrics.jsonl") >/dev/null ||
  fail "W=1 resumed losses differ from the uninterrupted run"

ARGS2=("${ARGS[@]}" --set zero.stage=2 --set zero.reduce_bucket_size=20000)
mpirun -np 2 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/full2" "${ARGS2[@]}" >/dev/null 2>&1 ||
  fail "W=2 full run"
mpirun -np 2 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/cut2" "${ARGS2[@]}" --set train.steps=4 \
  >/dev/null 2>&1 || fail "W=2 first half"
mpirun -np 2 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/cut2" --resume "${ARGS2[@]}" >/dev/null 2>&1 ||
  fail "W=2 resume"
diff <(losses "$WORK/full2/metrics.jsonl") <(losses "$WORK/cut2/metrics.jsonl") >/dev/null ||
  fail "W=2 resumed losses differ from the uninterrupted run"

mkdir -p "$WORK/cut3" && cp -r "$WORK/cut2/checkpoints" "$WORK/cut3/" && rm -rf "$WORK/cut3/checkpoints/step_00000008"
mpirun -np 3 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/cut3" --resume "${ARGS2[@]}" >"$WORK/w3.txt" 2>&1 ||
  fail "W=3 resume of a W=2 checkpoint: $(tail -2 "$WORK/w3.txt")"
grep -q "saved by 2 ranks" "$WORK/w3.txt" || fail "W=3 did not load the W=2 checkpoint"
echo "PASS resume_after_kill"
