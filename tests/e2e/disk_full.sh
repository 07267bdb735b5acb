# A full disk during training and during a checkpoint write: the run stops at
# once with one line naming the file and the OS error, what was printed before
# is out, metrics.jsonl ends with a whole record, and no temporary file or
# directory is left. On a tiny tmpfs when this user can mount one (ENOSPC), and
# always under a file-size limit, `ulimit -f` (EFBIG), which needs no mount.
. "$(dirname "$0")/../support/e2e_lib.sh"
MNT=$WORK/mnt
mkdir -p "$MNT"
mounted=0
if mount -t tmpfs -o size=512k tmpfs "$MNT" 2>/dev/null; then
  mounted=1
  trap 'umount "$MNT" 2>/dev/null; rm -rf "$WORK"' EXIT
fi
# One micro-step of 1 x 32 tokens on a 1-layer model: about 110 bytes of
# metrics per step, a 264 KB checkpoint. Progress lines only at the first step,
# so that stdout stays under the file-size limit.
TINY=(--set "data.train=$ZT_DATA_DIR/train_*.bin" --set "data.val=$ZT_DATA_DIR/val_*.bin"
      --set data.tokenizer=byte --set model.vocab_size=256 --set model.n_layer=1
      --set model.n_head=2 --set model.n_embd=32 --set model.seq_len=32 --set train.micro_batch=1
      --set train.global_batch_tokens=32 --set train.eval_every=0 --set train.sample_every=0
      --set train.log_every=0)

# Every line of metrics.jsonl is a whole JSON record; prints their count.
whole_records() {
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
assert text == "" or text.endswith("\n"), "metrics.jsonl ends inside a line"
lines = text.splitlines()
for n, line in enumerate(lines):
    assert json.loads(line)["step"] == n + 1, f"record {n + 1} is {line!r}"
print(len(lines))
PY
}

# run_case NAME EXPECTED_ERROR LIMIT_CMD ZEROTRAIN_ARGS... : the run must fail
# with exactly one error line containing EXPECTED_ERROR.
run_case() {
  local name=$1 want=$2 limit=$3
  shift 3
  (eval "$limit"; exec timeout 300 "$@") >"$WORK/$name.out" 2>"$WORK/$name.err"
  local rc=$?
  [ "$rc" -ne 0 ] || fail "$name: the run succeeded"
  [ "$rc" -ne 124 ] || fail "$name: timed out"
  # Open MPI's launcher reports the SIGXFSZ the kernel raised: "Forwarding signal 25 to job".
  sed -i '/Forwarding signal 25 to job/d' "$WORK/$name.err"
  # mpirun adds its own banner after a non-zero exit; zerotrain's lines are counted.
  local lines
  if [ "$1" = mpirun ]; then lines=$(grep -c '^zerotrain' "$WORK/$name.err"); else lines=$(grep -c . "$WORK/$name.err"); fi
  [ "$lines" -eq 1 ] || fail "$name: not one error line: $(cat "$WORK/$name.err")"
  grep -qF -- "$want" "$WORK/$name.err" || fail "$name: '$(cat "$WORK/$name.err")' lacks '$want'"
}

check_training_case() {  # name run_dir error_text
  local records
  records=$(whole_records "$2/metrics.jsonl") || fail "$1: metrics.jsonl is not whole records"
  [ "$records" -gt 5 ] || fail "$1: only $records records before the disk filled"
  # Printed before the failure, and flushed before the job went down.
  grep -q "^step     1/2000 " "$WORK/$1.out" || fail "$1: the first progress line is missing"
  [ -z "$(ls "$2" | grep -E '\.tmp')" ] || fail "$1: temporary files left: $(ls "$2")"
  [ ! -e "$2/summary.json" ] || fail "$1: a summary was written"
}

check_checkpoint_case() {  # name run_dir
  [ -d "$2/checkpoints" ] || fail "$1: no checkpoints directory"
  [ -z "$(ls -A "$2/checkpoints")" ] || fail "$1: left in checkpoints/: $(ls -A "$2/checkpoints")"
  [ "$(whole_records "$2/metrics.jsonl")" -eq 2 ] || fail "$1: metrics.jsonl"
}

# Under a file-size limit: metrics.jsonl passes 8 KiB during training; then a
# checkpoint's rank file passes 100 KiB (1 rank, then 2 ranks at stage 2). Open
# MPI's shared-memory files would pass the limit too: PMIx keeps its data in a
# hash and the ranks talk over TCP instead.
LIMIT="export PMIX_MCA_gds=hash OMPI_MCA_btl=self,tcp; ulimit -f"
run_case limit_train "$WORK/lt/metrics.jsonl: cannot write: File too large" "$LIMIT 8" \
  "$ZT_BIN" train configs/tiny.yaml "${TINY[@]}" --set train.steps=2000 --run-dir "$WORK/lt"
check_training_case limit_train "$WORK/lt"
run_case limit_ckpt "$WORK/lc/checkpoints/step_00000002.tmp/rank_00000.bin: cannot write: File too large" \
  "$LIMIT 100" "$ZT_BIN" train configs/tiny.yaml "${TINY[@]}" --set train.steps=4 \
  --set train.checkpoint_every=2 --run-dir "$WORK/lc"
check_checkpoint_case limit_ckpt "$WORK/lc"
run_case limit_ckpt_w2 "/checkpoints/step_00000002.tmp/rank_0000" "$LIMIT 100" \
  mpirun -np 2 "$ZT_BIN" train configs/tiny.yaml "${TINY[@]}" --set train.steps=4 \
  --set train.checkpoint_every=2 --set zero.stage=2 --set train.global_batch_tokens=64 \
  --set model.n_embd=64 --run-dir "$WORK/lc2"
check_checkpoint_case limit_ckpt_w2 "$WORK/lc2"

if [ "$mounted" -eq 1 ]; then
  # A nearly full file system: 8 KiB free, a page for config.yaml and one for metrics.
  mkdir "$MNT/run"
  free=$(df -B1 --output=avail "$MNT" | tail -1)
  head -c $((free - 8192)) /dev/zero >"$MNT/filler"
  run_case tmpfs_train "$MNT/run/metrics.jsonl: cannot write: No space left on device" : \
    "$ZT_BIN" train configs/tiny.yaml "${TINY[@]}" --set train.steps=2000 --run-dir "$MNT/run"
  check_training_case tmpfs_train "$MNT/run"
  # Room for the run's files, not for a 264 KB checkpoint.
  rm -rf "$MNT/run" "$MNT/filler"
  head -c $((300 * 1024)) /dev/zero >"$MNT/filler"
  run_case tmpfs_ckpt "$MNT/run/checkpoints/step_00000002.tmp/rank_00000.bin: cannot write: No space left on device" : \
    "$ZT_BIN" train configs/tiny.yaml "${TINY[@]}" --set train.steps=4 --set train.checkpoint_every=2 \
    --run-dir "$MNT/run"
  check_checkpoint_case tmpfs_ckpt "$MNT/run"
  echo "PASS disk_full (tmpfs and ulimit -f)"
else
  echo "PASS disk_full (ulimit -f only: this user cannot mount a tmpfs)"
fi
