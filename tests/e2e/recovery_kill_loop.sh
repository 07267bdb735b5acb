#!/usr/bin/env bash
# Recovery from memory under repeated failures (docs/recovery.md), on an
# emulated 2 nodes x 2 ranks cluster (scripts/cluster.sh, 1 Gbit/s links,
# prefix ztkl-): MiCS with shard groups of 2, so each node holds a whole copy
# of the state. scripts/supervise.sh runs the job and relaunches it with
# --recover; meanwhile a killer waits for the job to train (a new record in
# metrics.jsonl), then at a random moment of a step kill -9s either one random
# rank or a whole node (its processes and its snapshot store:
# cluster.sh kill-node), FAILURES times in all (default 10). Then:
# - the job ends with exit 0 after at least FAILURES relaunches (a node of
#   this oversubscribed host sometimes stalls for many seconds, which the peer
#   watch, at failure_timeout_s 10 here, takes for a hang: such a relaunch is
#   counted and recovered like the others);
# - its losses and final weights (exported) equal an uninterrupted run's,
#   bit for bit (the reference runs on localhost with the cluster's collective
#   algorithms, which fix the summation order: the same bits, without the
#   stalls);
# - every relaunch restored from memory (no disk fallback was needed);
# - nothing of the run is left in the snapshot stores, and `down` leaves no
#   store and no Open MPI segment of the cluster's nodes in /dev/shm.
# Without root, network namespaces or tc's tbf it prints a SKIPPED line and passes.
here=$(cd "$(dirname "$0")/../.." && pwd)
source "$here/tests/support/e2e_lib.sh"
cd "$here" || fail "cannot enter the repository root"
P=ztkl-
C=(scripts/cluster.sh --prefix "$P")
FAILURES=${FAILURES:-10}
STORE_ROOT=${ZT_SNAPSHOT_ROOT:-/dev/shm/zerotrain}
cluster_test_or_skip recovery_kill_loop "$P"
"${C[@]}" down >/dev/null 2>&1
trap '"${C[@]}" down >/dev/null 2>&1; [ -n "${KEEP:-}" ] && cp -r "$WORK" /tmp/kl-keep; rm -rf "$WORK"' EXIT
"${C[@]}" up --nodes 2 --ranks-per-node 2 --link 1gbit >"$WORK/up.log" 2>&1 || fail "up: $(cat "$WORK/up.log")"

STEPS=400
ARGS=("${SMALL[@]}" --set train.steps=$STEPS --set train.checkpoint_every=$STEPS
  --set train.recovery=memory --set zero.stage=3 --set zero.mics_shard_size=2)
env_file=$("${C[@]}" env) || fail "cluster env"
(
  eval "$(grep '^export OMPI_MCA_coll_' "$env_file")"
  timeout 300 mpirun -np 4 "$ZT_BIN" train configs/tiny.yaml "${ARGS[@]}" --run-dir "$WORK/full"
) >"$WORK/full.log" 2>&1 || fail "uninterrupted run: $(tail -3 "$WORK/full.log")"

records() { [ -f "$1" ] && wc -l <"$1" || echo 0; }
# The pids of zerotrain ranks in node $1's namespace.
ranks_on() { for p in $(ip netns pids "${P}n$1" 2>/dev/null); do [ "$(cat /proc/$p/comm 2>/dev/null)" = zerotrain ] && echo "$p"; done; }

cut=$WORK/cut
scripts/supervise.sh --max-restarts $((3 * FAILURES)) --log "$WORK/attempts.jsonl" --linger 5 -- \
  "${C[@]}" run --timeout 300 -- "$ZT_BIN" train configs/tiny.yaml "${ARGS[@]}" \
  --set system.failure_timeout_s=10 --run-dir "$cut" \
  >"$WORK/cut.log" 2>&1 &
supervisor=$!
kills=0 seen=0
while [ "$kills" -lt "$FAILURES" ] && kill -0 "$supervisor" 2>/dev/null; do
  n=$(records "$cut/metrics.jsonl")
  # Train first: a step completed since the last kill, so that a snapshot exists.
  if [ "$n" -le "$seen" ] || [ "$n" -ge $((STEPS - 5)) ]; then
    sleep 0.05
    continue
  fi
  sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
  if [ $((RANDOM % 2)) = 0 ]; then
    node=$((RANDOM % 2))
    "${C[@]}" kill-node "$node" >>"$WORK/kills.log" 2>&1 || fail "kill-node $node: $(tail -1 "$WORK/kills.log")"
  else
    node=$((RANDOM % 2))
    pids=($(ranks_on "$node"))
    [ ${#pids[@]} -gt 0 ] || continue
    victim=${pids[$((RANDOM % ${#pids[@]}))]}
    kill -9 "$victim" 2>/dev/null || continue
    echo "rank pid $victim on node $node: SIGKILL at $(date +%s.%N)" >>"$WORK/kills.log"
  fi
  kills=$((kills + 1))
  # Wait for the job to go down before the next one (each failure is its own).
  for _ in $(seq 300); do
    [ -z "$(ranks_on 0)$(ranks_on 1)" ] && break
    sleep 0.1
  done
  seen=$(records "$cut/metrics.jsonl")
done
wait "$supervisor"
rc=$?
[ "$rc" = 0 ] || fail "the supervised job exited $rc: $(tail -5 "$WORK/cut.log")"
[ "$kills" = "$FAILURES" ] || fail "only $kills of $FAILURES failures were injected before the job ended"
relaunches=$(grep -c '"recover": true' "$WORK/attempts.jsonl")
[ "$relaunches" -ge "$FAILURES" ] || fail "$relaunches relaunches for $FAILURES failures"
grep -q "disk checkpoint" "$WORK/cut.log" && fail "a relaunch fell back to disk: $(grep -m1 'disk checkpoint' "$WORK/cut.log")"
diff <(losses "$WORK/full/metrics.jsonl") <(losses "$cut/metrics.jsonl") >"$WORK/losses.diff" ||
  fail "losses differ from the uninterrupted run's after $kills failures: $(head -4 "$WORK/losses.diff")"
final=$(printf 'step_%08d' "$STEPS")
for r in full cut; do
  "$ZT_BIN" export --checkpoint "$WORK/$r/checkpoints/$final" --format llmc "$WORK/$r.bin" >/dev/null ||
    fail "export of $r"
done
cmp -s "$WORK/full.bin" "$WORK/cut.bin" || fail "final weights differ from the uninterrupted run's"
for r in full cut; do
  ls -d "$STORE_ROOT"/*/"${P}"n* >/dev/null 2>&1 && fail "$r: a snapshot store of the cluster's nodes is left: $(ls -d "$STORE_ROOT"/*/"${P}"n*)"
done
"${C[@]}" down >/dev/null 2>&1
left=$(ls -d "$STORE_ROOT"/*/"${P}"n* /dev/shm/vader_segment."${P}"n* 2>/dev/null)
[ -z "$left" ] || fail "left in /dev/shm after down: $left"
echo "PASS recovery_kill_loop: $kills failures ($(grep -c 'store removed' "$WORK/kills.log") whole nodes, $(grep -c 'rank pid' "$WORK/kills.log") single ranks), $relaunches relaunches ($((relaunches - kills)) after stalls taken for hangs), losses and weights bit-identical"
