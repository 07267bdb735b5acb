# In-memory snapshots and --recover (docs/recovery.md) on localhost mpirun: one
# rank is killed with kill -9 at a random moment of a run, the job is
# relaunched with --recover, and its losses and final weights must be
# bit-identical to an uninterrupted run's:
#  - W = 2, stage 0: the dead rank's region is deleted too, so its state must
#    come from rank 0's replica over the communicator;
#  - W = 3, stage 1: every region survives, each rank restores its own;
#  - W = 4, stage 2: the dead rank's region is deleted and no replica of its
#    shard exists, so the run must fall back to the newest disk checkpoint and say so;
#  - W = 4 as 2 data x 2 tensor ranks, stage 0: the dead rank's region is
#    deleted, so its shard must come from its data-parallel peer (the
#    snapshots' extents are the whole model's);
#  - W = 4 as 2 data x 2 pipeline stages, stage 1: each rank restores its own.
# After each successful run nothing of it is left under the store root;
# a --recover with neither snapshots nor checkpoints fails in one line.
. "$(dirname "$0")/../support/e2e_lib.sh"
STORES=()
# A failed check leaves its killed run's store: remove it with the work directory.
root=${ZT_SNAPSHOT_ROOT:-/dev/shm/zerotrain}
trap 'rm -rf "$WORK" "${STORES[@]}"; rmdir "$root"/* "$root" 2>/dev/null' EXIT
ARGS=("${SMALL[@]}" --set train.steps=40 --set train.checkpoint_every=5 --set train.recovery=memory)

# The node directory of a run's store (snapshot_format.h: FNV-1a 64 of the absolute run dir).
store_of() {
  /usr/bin/python3 -c '
import os, socket, sys
h = 1469598103934665603
for c in os.path.abspath(sys.argv[1]).encode():
    h = ((h ^ c) * 1099511628211) % 2**64
print("%s/%016x/%s" % (os.environ.get("ZT_SNAPSHOT_ROOT") or "/dev/shm/zerotrain", h, socket.gethostname()))' "$1"
}
export_weights() {
  "$ZT_BIN" export --checkpoint "$1/checkpoints/step_00000040" --format llmc "$2" >/dev/null ||
    fail "export of $1"
}

check_case() {  # W stage delete-dead-region expected-line [NAME GRID-ARGS...]
  local w=$1 stage=$2 delete=$3 want=$4 name=${5:-$1}
  shift 4
  [ $# -gt 0 ] && shift
  local full=$WORK/full$name cut=$WORK/cut$name
  # Without a replica the disk checkpoint of step 5 must exist before the kill.
  local first=$((delete == 1 && stage > 0 ? 6 : 2))
  local args=("${ARGS[@]}" --set zero.stage=$stage --set zero.reduce_bucket_size=20000 "$@")
  local victim=$((RANDOM % w)) after=$((first + RANDOM % 8)) pid store
  mpirun -np "$w" "$ZT_BIN" train configs/tiny.yaml --run-dir "$full" "${args[@]}" >"$full.txt" 2>&1 ||
    fail "W=$w uninterrupted run: $(tail -2 "$full.txt")"
  store=$(store_of "$cut")
  STORES+=("$store")
  mpirun -np "$w" "$ZT_BIN" train configs/tiny.yaml --run-dir "$cut" "${args[@]}" >"$cut.txt" 2>&1 &
  local job=$!
  for _ in $(seq 600); do
    pid=$(rank_pid "$cut" "$victim")
    [ -n "$pid" ] && break
    sleep 0.05
  done
  [ -n "$pid" ] || fail "W=$w: rank $victim never started"
  for _ in $(seq 3000); do
    [ "$(cat "$cut/metrics.jsonl" 2>/dev/null | wc -l)" -ge "$after" ] && break
    sleep 0.01
  done
  sleep "0.0$((RANDOM % 10))"
  kill -9 "$pid" 2>/dev/null || fail "W=$w: rank $victim ended before the kill"
  wait "$job" && fail "W=$w: the job survived the kill of rank $victim"
  [ -e "$store/$(printf 'rank_%05d.snap' "$victim")" ] || fail "W=$w: no region of rank $victim in $store"
  cp "$cut/metrics.jsonl" "$cut.killed.jsonl"
  [ "$delete" = 1 ] && rm "$store/$(printf 'rank_%05d.snap' "$victim")"
  mpirun -np "$w" "$ZT_BIN" train configs/tiny.yaml --run-dir "$cut" "${args[@]}" --recover \
    >"$cut.recover.txt" 2>&1 || fail "W=$w --recover: $(tail -2 "$cut.recover.txt")"
  want=${want//VICTIM/$victim}
  grep -q "$want" "$cut.recover.txt" ||
    fail "W=$w --recover (rank $victim killed after step $after): no '$want' in: $(grep -i recover "$cut.recover.txt")"
  diff <(losses "$full/metrics.jsonl") <(losses "$cut/metrics.jsonl") >/dev/null ||
    fail "W=$w: the recovered losses differ from the uninterrupted run's"
  export_weights "$full" "$full.bin"
  export_weights "$cut" "$cut.bin"
  cmp -s "$full.bin" "$cut.bin" || fail "W=$w: the recovered final weights differ"
  for d in "$store" "$(store_of "$full")"; do
    [ -e "$d" ] && fail "W=$w: $d is left after a successful run"
    [ -e "$(dirname "$d")" ] && fail "W=$w: $(dirname "$d") is left after a successful run"
  done
  echo "W=$w stage $stage${*:+ ($*)}: rank $victim killed after step $(losses "$cut.killed.jsonl" | wc -l);" \
    "$(grep -m1 "^recovered" "$cut.recover.txt")"
}

check_case 2 0 1 "^  rank VICTIM: rank [01] over the communicator"
check_case 3 1 0 "^  rank VICTIM: own store"
check_case 4 2 1 "falling back to the newest disk checkpoint"
check_case 4 0 1 "^  rank VICTIM: rank [0-3] over the communicator" 4t2 --set parallel.tensor=2
check_case 4 1 0 "^  rank VICTIM: own store" 4p2 --set parallel.pipeline=2

# Another W and stage: W = 4 stage 2 snapshots restored at W = 3 stage 3 (the
# region of rank 3, which no longer runs, is read by a rank of its node). The
# first step after recovery must match the uninterrupted W = 4 run's loss to
# 1e-12 relative (the same weights and sequences; resume_other_world.sh has why
# later steps differ in the last bits).
w3=$WORK/w4to3
STORES+=("$(store_of "$w3")")
mpirun -np 4 "$ZT_BIN" train configs/tiny.yaml --run-dir "$w3" "${ARGS[@]}" --set zero.stage=2 \
  --set zero.reduce_bucket_size=20000 --set system.fault_inject=1:3:exit >/dev/null 2>&1 &&
  fail "W=4 with rank 1 failing at step 3 exited 0"
mpirun -np 3 "$ZT_BIN" train configs/tiny.yaml --run-dir "$w3" "${ARGS[@]}" --set zero.stage=3 \
  --set zero.reduce_bucket_size=20000 --set train.steps=5 --recover >"$w3.txt" 2>&1 ||
  fail "W=3 --recover of W=4 snapshots: $(tail -2 "$w3.txt")"
grep -q "own node's store (rank 3's region)" "$w3.txt" || fail "W=3 did not read rank 3's region: $(grep -A3 ^recovered "$w3.txt")"
/usr/bin/python3 - "$WORK/full4/metrics.jsonl" "$w3/metrics.jsonl" "$(grep -o 'recovered step [0-9]*' "$w3.txt" | cut -d' ' -f3)" <<'PY' ||
import json, sys
full = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[1]))}
mine = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[2]))}
s = int(sys.argv[3]) + 1
sys.exit(0 if abs(full[s] - mine[s]) <= 1e-12 * abs(full[s]) else f"step {s}: {mine[s]!r} vs {full[s]!r}")
PY
  fail "W=3 recovered from W=4 snapshots: the first step's loss differs"
[ -e "$(store_of "$w3")" ] && fail "$(store_of "$w3") is left after a successful run"
echo "W=4 stage 2 -> W=3 stage 3: $(grep -m1 "^recovered" "$w3.txt")"

# Another grid: snapshots of 2 tensor x 2 pipeline ranks at ZeRO-1 restored at
# W = 2, data parallelism alone, ZeRO-2. Every extent is the whole model's, so
# the regions of ranks 2 and 3 (which no longer run) are read by the node's
# ranks. The recovered steps follow the uninterrupted grid run's losses within
# 1e-6 relative (the split model sums in another order: about 1e-9 here).
g=$WORK/grid_to_dp
GRID=("${ARGS[@]}" --set train.steps=6 --set zero.stage=1)
STORES+=("$(store_of "$g")" "$(store_of "$WORK/grid_full")")
mpirun -np 4 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/grid_full" "${GRID[@]}" \
  --set parallel.tensor=2 --set parallel.pipeline=2 >/dev/null 2>&1 || fail "the uninterrupted 2 x 2 grid run"
mpirun -np 4 "$ZT_BIN" train configs/tiny.yaml --run-dir "$g" "${GRID[@]}" --set parallel.tensor=2 \
  --set parallel.pipeline=2 --set system.fault_inject=1:3:exit >/dev/null 2>&1 &&
  fail "the 2 x 2 grid with rank 1 failing at step 3 exited 0"
mpirun -np 2 "$ZT_BIN" train configs/tiny.yaml --run-dir "$g" "${GRID[@]}" --set zero.stage=2 --recover \
  >"$g.txt" 2>&1 || fail "W=2 --recover of a 2 x 2 grid's snapshots: $(tail -2 "$g.txt")"
grep -q "^recovered step [0-9]* from in-memory snapshots" "$g.txt" || fail "the grid's snapshots were not used: $(grep -i recover "$g.txt")"
grep -q "own node's store (rank 3's region)" "$g.txt" || fail "rank 3's region was not read: $(grep -A3 ^recovered "$g.txt")"
/usr/bin/python3 - "$WORK/grid_full/metrics.jsonl" "$g/metrics.jsonl" <<'PY' || fail "recovered from the grid's snapshots: the losses differ"
import json, sys
full = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[1])) if "loss" in r}
mine = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[2])) if "loss" in r}
worst = max(abs(mine[s] - full[s]) / abs(full[s]) for s in full)
print(f"2 x 2 grid -> W = 2: {len(full)} steps, losses within {worst:.2g} relative")
sys.exit(0 if sorted(mine) == sorted(full) and worst <= 1e-6 else 1)
PY
[ -e "$(store_of "$g")" ] && fail "$(store_of "$g") is left after a successful run"

expect_error "--recover with nothing to recover" "--recover: nothing to recover" \
  "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/none" "${ARGS[@]}" --recover
echo "PASS snapshot_recovery"
