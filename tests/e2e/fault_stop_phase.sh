# ZT_FAULT_STOP_AT (docs/recovery.md, "Placing a failure in a phase") on
# localhost mpirun, W = 2, stage 0, snapshots every step:
#  - rank 1 stops itself in the optimizer step (zero_step) of step 5; once it
#    is stopped (state T) it is killed with kill -9; rank 0's failure record
#    must name rank 1, step 5 and phase zero_step, and --recover must end with
#    the losses and final weights of an uninterrupted run, bit for bit;
#  - rank 0 stops inside its snapshot copy beside step 4 (its newer slot torn)
#    and is killed: the torn slot must not load, so rank 0's state comes from
#    rank 1's snapshot over the communicator, and the run again ends bit-identical;
#  - a malformed value or a rank outside the job is refused in one line.
. "$(dirname "$0")/../support/e2e_lib.sh"
root=${ZT_SNAPSHOT_ROOT:-/dev/shm/zerotrain}
trap 'rm -rf "$WORK"; for s in "$WORK"/*.store; do [ -f "$s" ] && rm -rf "$(cat "$s")"; done; rmdir "$root"/* "$root" 2>/dev/null' EXIT
ARGS=("${SMALL[@]}" --set train.steps=10 --set train.checkpoint_every=10 --set train.recovery=memory
  --set zero.stage=0)
# mpirun -np 2 zerotrain train ... with $MPIRUN_ENV (-x NAME=VALUE) and "$@" as train arguments.
MPIRUN_ENV=()
run() { mpirun -np 2 "${MPIRUN_ENV[@]}" "$ZT_BIN" train configs/tiny.yaml "${ARGS[@]}" "$@"; }

stopped() { [ "$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" = T ]; }
export_weights() {
  "$ZT_BIN" export --checkpoint "$1/checkpoints/step_00000010" --format llmc "$2" >/dev/null ||
    fail "export of $1"
}

run --run-dir "$WORK/full" >"$WORK/full.txt" 2>&1 || fail "uninterrupted run: $(tail -2 "$WORK/full.txt")"
export_weights "$WORK/full" "$WORK/full.bin"

check_case() {  # name STEP:PHASE:RANK expected-record-phase (or "") expected-recover-line
  local name=$1 spec=$2 phase=$3 want=$4 cut=$WORK/$1 victim=${2##*:} pid
  MPIRUN_ENV=(-x "ZT_FAULT_STOP_AT=$spec")
  run --run-dir "$cut" >"$cut.txt" 2>&1 &
  local job=$!
  MPIRUN_ENV=()
  for _ in $(seq 1200); do
    pid=$(rank_pid "$cut" "$victim")
    [ -n "$pid" ] && stopped "$pid" && break
    sleep 0.05
  done
  stopped "$pid" || fail "$name: rank $victim did not stop at $spec: $(tail -3 "$cut.txt")"
  grep -q "ZT_FAULT_STOP_AT: stopping (SIGSTOP) at step ${spec%%:*}, phase $(echo "$spec" | cut -d: -f2)" "$cut.txt" ||
    fail "$name: no stop line in $(tail -3 "$cut.txt")"
  kill -9 "$pid"
  wait "$job" && fail "$name: the job survived the kill of rank $victim"
  local survivor=$((1 - victim)) record
  record=$(sed -n 's/^{"summary":"\([^"]*\)".*/\1/p' "$cut/failure/rank_0000$survivor.json" 2>/dev/null)
  echo "$record" | grep -q " lost=$victim .* lost_steps=${spec%%:*} " ||
    fail "$name: the record does not name rank $victim at step ${spec%%:*}: '$record'"
  [ -z "$phase" ] || echo "$record" | grep -q " lost_phases=$phase " ||
    fail "$name: the record does not name phase $phase: '$record'"
  mv "$cut/failure" "$cut.failure"
  run --run-dir "$cut" --recover >"$cut.recover.txt" 2>&1 || fail "$name --recover: $(tail -2 "$cut.recover.txt")"
  grep -q "$want" "$cut.recover.txt" || fail "$name --recover: no '$want' in: $(grep -A2 ^recovered "$cut.recover.txt")"
  diff <(losses "$WORK/full/metrics.jsonl") <(losses "$cut/metrics.jsonl") >/dev/null ||
    fail "$name: the recovered losses differ from the uninterrupted run's"
  export_weights "$cut" "$cut.bin"
  cmp -s "$WORK/full.bin" "$cut.bin" || fail "$name: the recovered final weights differ"
  echo "$name: $record; $(grep -m1 ^recovered "$cut.recover.txt")"
}

check_case optimizer 5:zero_step:1 zero_step "^recovered step 5 from in-memory snapshots"
check_case torn_copy 4:snapshot_copy:0 "" "^  rank 0: rank 1 over the communicator"

expect_error "a malformed ZT_FAULT_STOP_AT" "ZT_FAULT_STOP_AT: '5:optimizer:1': expected STEP:PHASE:RANK" \
  env ZT_FAULT_STOP_AT=5:optimizer:1 "$ZT_BIN" train configs/tiny.yaml "${ARGS[@]}" --run-dir "$WORK/bad"
expect_error "a rank outside the job" "rank 3 is not in this job of 1 ranks" \
  env ZT_FAULT_STOP_AT=5:forward:3 "$ZT_BIN" train configs/tiny.yaml "${ARGS[@]}" --run-dir "$WORK/bad"
[ -e "$WORK/bad" ] && fail "a refused ZT_FAULT_STOP_AT left $WORK/bad"
echo "PASS fault_stop_phase"
