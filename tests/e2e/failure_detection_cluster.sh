#!/usr/bin/env bash
# Failure detection across nodes (docs/recovery.md) on an emulated cluster of
# 3 nodes x 1 rank (scripts/cluster.sh, 1 Gbit/s links, prefix ztefd-): the
# peer watch reaches the other nodes at their 198.18.0.x addresses and names
# them by their own host names.
# - kill -9 of the rank on node 2 at a random moment: both survivors record
#   rank 2 on host ztefd-n2 within 2 s (bound: at once; slack for two busy
#   cores), and the job ends within 30 s;
# - node 2's link taken down (on the switch's end: no FIN or reset reaches
#   anyone): both survivors record rank 2, by timeout only after more than
#   3 s of silence, between 0.5 s before the timeout and 3.1 s after it
#   (counted from the cut), and their processes have ended 20 s after; the
#   link then comes back and mpirun ends within 60 s.
# Without root, network namespaces or tc's tbf it prints a SKIPPED line and passes.
here=$(cd "$(dirname "$0")/../.." && pwd)
source "$here/tests/support/e2e_lib.sh"
cd "$here" || fail "cannot enter the repository root"
P=ztefd-
C=(scripts/cluster.sh --prefix "$P")
cluster_test_or_skip failure_detection_cluster "$P"
"${C[@]}" down >/dev/null 2>&1
trap 'ip -n "${P}sw" link set "${P}p2" up 2>/dev/null; "${C[@]}" down >/dev/null 2>&1; rm -rf "$WORK"' EXIT

"${C[@]}" up --nodes 3 --ranks-per-node 1 --link 1gbit >"$WORK/up.log" 2>&1 || fail "up: $(cat "$WORK/up.log")"
LAUNCH=$("${C[@]}" launcher)
W=3 TIMEOUT=3 STEPS=400
now() { date +%s.%N; }

# The zerotrain processes running in node `n`'s namespace.
node_ranks() { ip netns pids "${P}n$1" | while read -r p; do [ "$(cat "/proc/$p/comm" 2>/dev/null)" = zerotrain ] && echo "$p"; done; }

start_job() {  # run_dir
  ZT_CLUSTER_TIMEOUT=300 "$LAUNCH" -np $W "$ZT_BIN" train configs/tiny.yaml --run-dir "$1" \
    "${SMALL[@]}" --set train.steps=$STEPS --set system.failure_timeout_s=$TIMEOUT >"$1.out" 2>"$1.err" &
  job=$!
  for _ in $(seq 900); do
    [ -s "$1/metrics.jsonl" ] && return 0
    kill -0 "$job" 2>/dev/null || fail "the job ended before its first step: $(tail -3 "$1.err")"
    sleep 0.1
  done
  fail "no step logged within 90 s"
}

job_running() { kill -0 "$job" 2>/dev/null && echo running; }
survivors() { node_ranks 0; node_ranks 1; }
wait_gone() {  # what seconds function: true once the function prints nothing
  for _ in $(seq $(($2 * 10))); do
    [ -z "$($3)" ] && return 0
    sleep 0.1
  done
  fail "$1 still there after $2 s"
}

# kill -9 of the rank on node 2.
start_job "$WORK/kill"
sleep "0.$((RANDOM % 10))"
pid=$(node_ranks 2)
[ -n "$pid" ] || fail "no zerotrain process in ${P}n2"
killed_at=$(now)
kill -9 "$pid"
wait_gone "the job" 30 job_running
detected=$(/usr/bin/python3 tests/e2e/check_failure_records.py "$WORK/kill" $W 2 \
  connection_closed,reported_by_peer $STEPS "${P}n2") || fail "$detected"
delay=$(echo "$detected - $killed_at" | bc)
[ "$(echo "$delay < 2" | bc)" = 1 ] || fail "kill: detected $delay s after the kill (bound: at once, 2 s slack)"
echo "kill -9 on node 2: both survivors recorded rank 2 (${P}n2) within $delay s"

# Node 2's link down.
start_job "$WORK/link"
sleep "0.$((RANDOM % 10))"
cut_at=$(now)
ip -n "${P}sw" link set "${P}p2" down || fail "cannot take ${P}p2 down"
wait_gone "zerotrain on nodes 0 and 1" 20 survivors
detected=$(/usr/bin/python3 tests/e2e/check_failure_records.py "$WORK/link" $W 2 \
  heartbeat_timeout,reported_by_peer $STEPS "${P}n2") || fail "$detected"
delay=$(echo "$detected - $cut_at" | bc)
[ "$(echo "$delay >= $TIMEOUT - 0.5" | bc)" = 1 ] || fail "link down: detected after only $delay s"
[ "$(echo "$delay <= $TIMEOUT + 3.1" | bc)" = 1 ] || fail "link down: detected $delay s after (bound $TIMEOUT + 3.1 s)"
ip -n "${P}sw" link set "${P}p2" up
wait_gone "mpirun" 60 job_running
echo "link of node 2 down: both survivors recorded rank 2 $delay s after (timeout $TIMEOUT s) and ended"
echo "PASS failure_detection_cluster"
