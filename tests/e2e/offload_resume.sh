# ZeRO-Offload to NVMe (a directory here) on 2 ranks: the losses equal the
# in-memory optimizer's, and every gradient byte went to the host before the
# step; one rank killed with kill -9 mid-run, then --resume:
# the losses after resume equal an uninterrupted run's; a normal exit leaves
# nvme_path empty; a bad nvme_path is one line naming the key, exit 2.
. "$(dirname "$0")/../support/e2e_lib.sh"
mkdir -p "$WORK/nvme"
BASE=("${SMALL[@]}" --set train.steps=16 --set train.checkpoint_every=2 --set zero.stage=2
      --set zero.sub_group_size=20000)
ARGS=("${BASE[@]}" --set zero.offload_optimizer.device=nvme
      --set "zero.offload_optimizer.nvme_path=$WORK/nvme" --set zero.offload_optimizer.buffer_count=2)
train2() { mpirun -np 2 "$ZT_BIN" train configs/tiny.yaml "$@"; }

train2 --run-dir "$WORK/mem" "${BASE[@]}" >/dev/null 2>&1 || fail "in-memory run"
train2 --run-dir "$WORK/full" "${ARGS[@]}" >"$WORK/full.txt" 2>&1 ||
  fail "offloaded run: $(tail -2 "$WORK/full.txt")"
diff <(losses "$WORK/mem/metrics.jsonl") <(losses "$WORK/full/metrics.jsonl") >/dev/null ||
  fail "nvme-offloaded losses differ from the in-memory optimizer's"
[ -z "$(ls -A "$WORK/nvme")" ] || fail "offload files left after a normal exit: $(ls "$WORK/nvme")"
grep -q '"nvme":{"params":0,"optimizer":[1-9]' "$WORK/full/summary.json" ||
  fail "summary.json has no nvme optimizer bytes"
# Stage 2 reports every gradient slice during the last backward: none is left for the step.
grep -q '"offload_grad_bytes_early":[1-9][0-9]*,"offload_grad_bytes_at_step":0' \
  "$WORK/full/summary.json" || fail "gradient copies not all started before the step"

mpirun -np 2 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/cut" "${ARGS[@]}" >"$WORK/cut.txt" 2>&1 &
pid=$!
for _ in $(seq 600); do
  ls "$WORK"/cut/checkpoints/step_*/COMPLETE >/dev/null 2>&1 && break
  sleep 0.05
done
rank=$(pgrep -P "$pid" zerotrain | head -1)
[ -n "$rank" ] && kill -9 "$rank" 2>/dev/null
wait "$pid" 2>/dev/null
ls "$WORK"/cut/checkpoints/step_*/COMPLETE >/dev/null 2>&1 ||
  fail "no checkpoint before the kill: $(tail -3 "$WORK/cut.txt")"
[ -e "$WORK/cut/summary.json" ] && fail "the run finished before the kill"
rm -rf "$WORK/nvme"/zerotrain-*  # what the killed ranks could not remove
train2 --run-dir "$WORK/cut" --resume "${ARGS[@]}" >"$WORK/resume.txt" 2>&1 ||
  fail "resume failed: $(tail -2 "$WORK/resume.txt")"
grep -q "resumed from" "$WORK/resume.txt" || fail "did not resume"
diff <(losses "$WORK/full/metrics.jsonl") <(losses "$WORK/cut/metrics.jsonl") >/dev/null ||
  fail "resumed losses differ from the uninterrupted run"

touch "$WORK/plain"
for bad in "$WORK/missing" "$WORK/plain"; do
  set +e
  "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/bad" "${BASE[@]}" \
    --set zero.offload_optimizer.device=nvme --set "zero.offload_optimizer.nvme_path=$bad" \
    >"$WORK/bad.txt" 2>&1
  rc=$?
  set -e
  [ "$rc" = 2 ] || fail "bad nvme_path $bad: exit $rc, expected 2: $(tail -1 "$WORK/bad.txt")"
  grep -q "zero.offload_optimizer.nvme_path: '$bad'" "$WORK/bad.txt" ||
    fail "bad nvme_path $bad: no line naming the key: $(tail -1 "$WORK/bad.txt")"
done
echo "PASS offload_resume"
