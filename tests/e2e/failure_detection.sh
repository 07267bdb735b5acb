# Failure detection (docs/recovery.md): on localhost mpirun at W = 3,
# (a) kill -9 of one rank at a random moment: every survivor writes
#     RUN/failure/rank_RRRRR.json naming it, at a step and phase it was in,
#     detected within 2 s of the kill (the bound is "at once"; 2 s is slack for
#     two busy cores), and the job ends within 20 s (mpirun's teardown);
# (b) SIGSTOP of one rank: lost by timeout only after more than
#     failure_timeout_s (2 s) of silence (the records' silent_s), detected
#     between 0.5 s before the timeout (its last message came at most a
#     heartbeat before the stop; 0.4 s of slack for a late heartbeat) and
#     failure_timeout_s + heartbeat + 3 s of slack after the stop; records
#     written, the job ends, and the test kills the stopped rank;
# (c) a normal run writes no failure directory and nothing on stderr;
# (d) a loss seen within 0.5 s after a SIGTERM (as mpirun sends when a rank
#     dies) is still recorded, with the signal, and that rank dies of it;
# (e) a SIGTERM to every rank of a healthy job stops it at a step boundary as
#     before: "stopped by signal 15", exit 143, no failure record.
. "$(dirname "$0")/../support/e2e_lib.sh"
W=3
TIMEOUT=2
STEPS=400
ARGS=("${SMALL[@]}" --set train.steps=$STEPS --set system.failure_timeout_s=$TIMEOUT)
now() { date +%s.%N; }

# The pid of one rank of the job `mpirun_pid` started.
rank_pid() {  # mpirun_pid rank
  local p
  for p in $(pgrep -P "$1"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" && echo "$p"
  done
}

# Starts the job in the background; returns once a step has been logged.
start_job() {  # run_dir
  mpirun -np $W "$ZT_BIN" train configs/tiny.yaml --run-dir "$1" "${ARGS[@]}" >"$1.out" 2>"$1.err" &
  job=$!
  for _ in $(seq 600); do
    [ -s "$1/metrics.jsonl" ] && return 0
    kill -0 "$job" 2>/dev/null || fail "the job ended before its first step: $(tail -3 "$1.err")"
    sleep 0.1
  done
  fail "no step logged within 60 s"
}

# Waits up to `limit` seconds for the job to end; sets rc and took (seconds).
wait_job() {  # limit
  local t0
  t0=$(now)
  for _ in $(seq $(($1 * 10))); do
    kill -0 "$job" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$job" 2>/dev/null && {
    kill -9 "$job"
    fail "the job did not end within $1 s of the failure"
  }
  wait "$job" 2>/dev/null
  rc=$?
  took=$(echo "$(now) - $t0" | bc)
}

# Every survivor's record names `lost` (tests/e2e/check_failure_records.py);
# sets detected to the latest detection time of all records.
check_records() {  # run_dir lost causes
  detected=$(/usr/bin/python3 tests/e2e/check_failure_records.py "$1" $W "$2" "$3" $STEPS) ||
    fail "$detected"
}

# (a) kill -9 of a random rank at a random moment.
victim=$((RANDOM % W))
start_job "$WORK/kill"
sleep "0.$((RANDOM % 10))"
pid=$(rank_pid "$job" "$victim")
[ -n "$pid" ] || fail "rank $victim's process not found"
killed_at=$(now)
kill -9 "$pid"
wait_job 20
[ "$rc" -ne 0 ] || fail "kill: the job exited 0"
check_records "$WORK/kill" "$victim" connection_closed,reported_by_peer
delay=$(echo "$detected - $killed_at" | bc)
[ "$(echo "$delay < 2" | bc)" = 1 ] || fail "kill: detected $delay s after the kill (bound: at once, 2 s slack)"
grep -q "zerotrain: rank [0-9] ([^)]*): lost rank $victim (" "$WORK/kill.err" ||
  fail "kill: no stderr line naming rank $victim"
echo "kill -9 of rank $victim: every survivor recorded it within $delay s; the job ended $took s after"

# (b) SIGSTOP of a random rank: silence, detected by the timeout.
victim=$((RANDOM % W))
start_job "$WORK/stop"
sleep "0.$((RANDOM % 10))"
pid=$(rank_pid "$job" "$victim")
[ -n "$pid" ] || fail "rank $victim's process not found"
stopped_at=$(now)
kill -STOP "$pid"
wait_job 30
kill -CONT "$pid" 2>/dev/null
kill -9 "$pid" 2>/dev/null
[ "$rc" -ne 0 ] || fail "stop: the job exited 0"
check_records "$WORK/stop" "$victim" heartbeat_timeout,reported_by_peer
delay=$(echo "$detected - $stopped_at" | bc)
bound=$(echo "$TIMEOUT + 0.1 + 3" | bc)
[ "$(echo "$delay >= $TIMEOUT - 0.5" | bc)" = 1 ] || fail "stop: detected after only $delay s"
[ "$(echo "$delay <= $bound" | bc)" = 1 ] || fail "stop: detected $delay s after the stop (bound $bound s)"
echo "SIGSTOP of rank $victim: every survivor recorded it $delay s after (timeout $TIMEOUT s); the job ended $took s after"

# (c) a normal run: no record, nothing on stderr.
mpirun -np $W "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/ok" "${SMALL[@]}" --set train.steps=6 \
  --set system.failure_timeout_s=$TIMEOUT >"$WORK/ok.out" 2>"$WORK/ok.err" || fail "normal run: exit $?"
[ ! -e "$WORK/ok/failure" ] || fail "normal run wrote $(ls "$WORK/ok/failure")"
[ ! -s "$WORK/ok.err" ] || fail "normal run printed on stderr: $(head -3 "$WORK/ok.err")"
echo "normal run: no failure record, nothing on stderr"
# (d) rank 1 stopped (the job stalls, so rank 0 cannot stop at a step
# boundary), SIGTERM to rank 0, then rank 1 killed 0.2 s later, within the
# 0.5 s grace (the pause lets the signal be handled before the loss is seen:
# a process-directed signal waits for the thread it was given to run): rank 0
# records the loss with stop_signal 15.
start_job "$WORK/term"
pid1=$(rank_pid "$job" 1)
pid0=$(rank_pid "$job" 0)
kill -STOP "$pid1"
kill -TERM "$pid0"
sleep 0.2
kill -9 "$pid1"
wait_job 20
check_records "$WORK/term" 1 connection_closed,reported_by_peer
grep -q '"stop_signal":15' "$WORK/term/failure/rank_00000.json" ||
  fail "SIGTERM then loss: rank 0's record lacks stop_signal 15: $(cat "$WORK/term/failure/rank_00000.json")"
grep -q '"stop_signal":0' "$WORK/term/failure/rank_00002.json" ||
  fail "SIGTERM then loss: rank 2 got no signal but its record says otherwise"
echo "SIGTERM then a loss within the grace: recorded with stop_signal 15"

# (e) an ordinary stop: SIGTERM to every rank.
start_job "$WORK/healthy"
kill -TERM $(pgrep -P "$job")
wait_job 30
[ "$rc" -ne 0 ] || fail "SIGTERM: the job exited 0"
grep -q "zerotrain: stopped by signal 15 after step" "$WORK/healthy.err" ||
  fail "SIGTERM: no 'stopped by signal 15' line: $(head -3 "$WORK/healthy.err")"
[ ! -e "$WORK/healthy/failure" ] || fail "SIGTERM of a healthy job wrote $(ls "$WORK/healthy/failure")"
grep -q '"world_size":3' "$WORK/healthy/summary.json" || fail "SIGTERM: no summary written"
echo "SIGTERM of a healthy job: stopped at a step boundary, no failure record"
echo "PASS failure_detection"
