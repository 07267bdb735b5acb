# Nothing loads a checkpoint that does not verify.
#  1. A kill -9 loop over checkpoint writes, a different corruption injected into
#     the newest complete checkpoint after each kill: every --resume rejects it in
#     one line naming the file, falls back to the previous one, and the finished
#     run's losses equal an uninterrupted run's exactly.
#  2. At W = 2 a corrupt rank_00001.bin is found by the rank that verifies it.
#  3. export, eval and sample refuse a corrupt checkpoint naming the file; a
#     non-numeric meta.json field (with a matching checksum) and a piece count
#     with bit 40 set are one-line errors, within seconds.
#  4. No checkpoint verifies: a clear error, exit 2, nothing written.
#  5. A resume into another model shape or vocabulary fails in one line naming
#     the key and both values, and leaves config.yaml and metrics.jsonl as they were.
#  6. A resumed job that aborts has printed its "resumed from" line.
. "$(dirname "$0")/../support/e2e_lib.sh"
FAST=("${SMALL[@]}" --set train.global_batch_tokens=256)
ARGS=("${FAST[@]}" --set train.steps=24 --set train.checkpoint_every=1 --set train.keep_checkpoints=3)
train() { "$ZT_BIN" train configs/tiny.yaml "${ARGS[@]}" "$@"; }
complete() { for d in "$1"/checkpoints/step_*; do [ -e "$d/COMPLETE" ] && echo "$d"; done; }
newest() { complete "$1" | sort | tail -1; }
# Records an edited meta.json's new size and CRC-32 in COMPLETE, as a writer would.
fix_meta_crc() {  # checkpoint_dir
  /usr/bin/python3 - "$1" <<'PY'
import sys, zlib
d = sys.argv[1]
data = open(f"{d}/meta.json", "rb").read()
open(f"{d}/COMPLETE", "w").write(f"meta.json {len(data)} {zlib.crc32(data):08x}\n")
PY
}
corrupt() {  # kind checkpoint_dir
  local d=$2 f=$2/rank_00000.bin size
  size=$(stat -c %s "$f")
  case $1 in
    data) printf '\x42' | dd of="$f" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null ;;
    header) printf '\x07' | dd of="$f" bs=1 seek=9 conv=notrunc 2>/dev/null ;;
    truncate) truncate -s $((size - 100)) "$f" ;;
    missing) rm "$f" ;;
    meta) sed -i 's/"stage":0/"stage":1/' "$d/meta.json" ;;
    config) echo "# edited" >>"$d/config.yaml" ;;
    complete) echo garbage >"$d/COMPLETE" ;;
  esac
}

# 1. The kill -9 loop.
train --run-dir "$WORK/full" >/dev/null 2>&1 || fail "uninterrupted run"
run=$WORK/cut
kinds=(data header truncate missing meta config complete)
resume=()
rounds=()
for i in "${!kinds[@]}"; do
  before=$(newest "$run")
  "$ZT_BIN" train configs/tiny.yaml "${ARGS[@]}" --run-dir "$run" "${resume[@]}" >"$WORK/out$i.txt" 2>&1 &
  pid=$!  # zerotrain itself, not a subshell, so that kill -9 reaches it
  for _ in $(seq 6000); do  # until a new checkpoint is complete beside an older one, or the end
    now=$(newest "$run")
    [ -n "$now" ] && [ "$now" != "$before" ] && [ "$(complete "$run" | wc -l)" -ge 2 ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.02
  done
  sleep "0.0$((RANDOM % 3))"  # the kill lands before, during or after the next write
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  if [ "$i" -gt 0 ]; then
    grep -q "rejected $bad" "$WORK/out$i.txt" || fail "resume $i did not reject $bad: $(head -c 600 "$WORK/out$i.txt")"
    [ "$(grep -c -- '--resume: rejected' "$WORK/out$i.txt")" -eq 1 ] || fail "resume $i: not one rejection line: $(grep rejected "$WORK/out$i.txt")"
    grep -q "resumed from .*; 1 newer checkpoint rejected" "$WORK/out$i.txt" || fail "resume $i: no fallback line: $(grep -v "^  " "$WORK/out$i.txt" | head -c 1500)"
  fi
  bad=$(newest "$run")
  [ -n "$bad" ] || fail "no checkpoint after run $i"
  [ "$(basename "$bad")" = step_00000024 ] && break  # finished before the kill
  corrupt "${kinds[$i]}" "$bad"
  rounds+=("${kinds[$i]}")
  resume=(--resume)
done
[ "${#rounds[@]}" -ge 4 ] || fail "only ${#rounds[@]} kill/corrupt rounds before the run ended"
train --run-dir "$run" --resume >"$WORK/last.txt" 2>&1 || fail "final resume: $(tail -2 "$WORK/last.txt")"
diff <(losses "$WORK/full/metrics.jsonl") <(losses "$run/metrics.jsonl") >/dev/null ||
  fail "losses after the kill/corrupt/resume loop differ from the uninterrupted run"

# 2. W = 2, stage 2: rank 1's file is corrupt, rank 1 of the job verifies it.
ARGS2=("${FAST[@]}" --set train.steps=4 --set train.checkpoint_every=2 --set zero.stage=2)
mpirun -np 2 "$ZT_BIN" train configs/tiny.yaml "${ARGS2[@]}" --run-dir "$WORK/w2" >/dev/null 2>&1 || fail "W=2 run"
cp "$WORK/w2/metrics.jsonl" "$WORK/w2.metrics"
f1=$WORK/w2/checkpoints/step_00000004/rank_00001.bin
printf '\x42' | dd of="$f1" bs=1 seek=$(($(stat -c %s "$f1") - 5)) conv=notrunc 2>/dev/null
mpirun -np 2 "$ZT_BIN" train configs/tiny.yaml "${ARGS2[@]}" --run-dir "$WORK/w2" --resume >"$WORK/w2.txt" 2>&1 ||
  fail "W=2 resume: $(tail -2 "$WORK/w2.txt")"
grep -q "rejected $WORK/w2/checkpoints/step_00000004/rank_00001.bin: data checksum mismatch" "$WORK/w2.txt" ||
  fail "W=2: the corrupt rank file was not named: $(grep -v '^  ' "$WORK/w2.txt" | head -5)"
[ "$(grep -c -- '--resume: rejected' "$WORK/w2.txt")" -eq 1 ] || fail "W=2: not one rejection line"
diff <(losses "$WORK/w2.metrics") <(losses "$WORK/w2/metrics.jsonl") >/dev/null || fail "W=2 losses after fallback"

# 3. export, eval, sample; typed metadata; bounded headers.
ck=$(newest "$WORK/full")
cp -r "$ck" "$WORK/ck"
corrupt data "$WORK/ck"
expect_error() {  # what expected-text command...
  local what=$1 want=$2
  shift 2
  out=$(timeout 300 "$@" 2>&1 >/dev/null); rc=$?
  [ "$rc" -eq 2 ] || fail "$what: exit $rc (expected 2): $out"
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "$what: not one line: $out"
  printf '%s' "$out" | grep -qF -- "$want" || fail "$what: '$out' lacks '$want'"
}
expect_error export "$WORK/ck/rank_00000.bin: data checksum mismatch" \
  "$ZT_BIN" export --checkpoint "$WORK/ck" --format llmc "$WORK/model.bin"
[ ! -e "$WORK/model.bin" ] || fail "export wrote a model from a corrupt checkpoint"
expect_error eval "$WORK/ck/rank_00000.bin: data checksum mismatch" \
  "$ZT_BIN" eval configs/tiny.yaml "${FAST[@]}" --checkpoint "$WORK/ck" --batches 1
expect_error sample "$WORK/ck/rank_00000.bin: data checksum mismatch" \
  "$ZT_BIN" sample --checkpoint "$WORK/ck" --tokens 3
rm -rf "$WORK/ck" && cp -r "$ck" "$WORK/ck"
sed -i 's/"step":24/"step":"ten"/' "$WORK/ck/meta.json" && fix_meta_crc "$WORK/ck"
expect_error "non-numeric step" "$WORK/ck/meta.json: field 'step': expected an integer" \
  "$ZT_BIN" export --checkpoint "$WORK/ck" --format llmc "$WORK/model.bin"
rm -rf "$WORK/ck" && cp -r "$ck" "$WORK/ck"
printf '\x01' | dd of="$WORK/ck/rank_00000.bin" bs=1 seek=29 conv=notrunc 2>/dev/null  # bit 40 of the piece count
expect_error "piece count 2^40" "piece count 1099511627" \
  "$ZT_BIN" export --checkpoint "$WORK/ck" --format llmc "$WORK/model.bin"
expect_error "not a directory" "not a checkpoint directory (it is a character device)" \
  "$ZT_BIN" sample --checkpoint /dev/zero

# 4. No checkpoint verifies.
for d in $(complete "$run"); do corrupt data "$d"; done
sums=$(cat "$run/config.yaml" "$run/metrics.jsonl" | md5sum)
out=$(train --run-dir "$run" --resume 2>&1); rc=$?
[ "$rc" -eq 2 ] || fail "all corrupt: exit $rc"
[ "$(printf '%s\n' "$out" | grep -c -- '--resume: rejected')" -eq 3 ] || fail "all corrupt: not one line per checkpoint"
printf '%s' "$out" | tail -1 | grep -q "none of the 3 complete checkpoints verifies" || fail "all corrupt: $(printf '%s' "$out" | tail -1)"
[ "$(cat "$run/config.yaml" "$run/metrics.jsonl" | md5sum)" = "$sums" ] || fail "all corrupt: run files changed"

# 5. Another model shape or vocabulary: one line, nothing written.
sums=$(cat "$WORK/full/config.yaml" "$WORK/full/metrics.jsonl" | md5sum)
listing=$(ls -R "$WORK/full")
for change in model.n_layer=1:"model.n_layer is 2 in the checkpoint but 1" \
              model.n_embd=32:"model.n_embd is 64 in the checkpoint but 32" \
              model.vocab_size=300:"model.vocab_size is 256 in the checkpoint but 300"; do
  expect_error "resume with ${change%%:*}" "${change#*:} in the config" \
    "$ZT_BIN" train configs/tiny.yaml "${ARGS[@]}" --run-dir "$WORK/full" --resume --set "${change%%:*}"
done
[ "$(cat "$WORK/full/config.yaml" "$WORK/full/metrics.jsonl" | md5sum)" = "$sums" ] ||
  fail "a refused resume changed config.yaml or metrics.jsonl"
[ "$(ls -R "$WORK/full")" = "$listing" ] || fail "a refused resume changed the run directory"
# 6. A resumed job that then aborts: its "resumed from" line is out before the abort.
"$ZT_BIN" train configs/tiny.yaml "${ARGS[@]}" --run-dir "$WORK/full" --resume --set train.steps=26 \
  --set system.fault_inject=0:24:throw >"$WORK/abort.out" 2>"$WORK/abort.err" && fail "the fault did not fire"
grep -q "^resumed from $WORK/full/checkpoints/step_00000024 " "$WORK/abort.out" ||
  fail "the resumed line was lost in the abort: $(tail -2 "$WORK/abort.out")"
grep -q "fault injection" "$WORK/abort.err" || fail "no fault message: $(cat "$WORK/abort.err")"
echo "PASS checkpoint_integrity (kill -9 rounds, corruption after each: ${rounds[*]})"
