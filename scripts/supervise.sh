#!/usr/bin/env bash
# Relaunches a failed training job with --recover, as a cluster scheduler's
# restart policy would: the job's state then comes back from the snapshot
# stores (own node, else a replica over the communicator, else disk).
#
#   scripts/supervise.sh [--max-restarts N] [--log FILE] [--timeout S] [--linger S] -- COMMAND...
#
# COMMAND is the launch line of a `zerotrain train` job (mpirun ..., or
# scripts/cluster.sh run -- ... on an emulated cluster; on one a killed node's
# namespace stays, so a relaunch on the same hostfile is the surviving nodes
# plus a replacement with an empty store). Exit 0 ends it; exit 2 (a config or
# data error, which a relaunch would only repeat) is passed on at once; any
# other exit relaunches COMMAND with --recover appended, at most N times
# (default 3), after which the last exit status is passed on.
# --log FILE appends one JSON line per attempt: attempt, start and end (Unix
# seconds, wall clock), exit status, and whether it ran with --recover.
# --timeout S bounds each attempt (default 1800 s; 124 after a timeout, which
# counts as a failure). SIGINT or SIGTERM stops the attempt and the supervisor.
# Failure records: when COMMAND has --run-dir DIR, an attempt that wrote
# DIR/failure/ (the peer watch's records, docs/recovery.md) and still runs S
# seconds later (--linger, default 15) is ended: mpirun can wait for the daemon
# of a node whose link is down long after every rank has gone. Before a
# relaunch the records move to DIR/failure.attempt-K, so that each attempt's
# records stay apart.
set -u

die() {
  echo "supervise.sh: $*" >&2
  exit 2
}
usage() {
  sed -n '2,/^set -u$/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
  exit 2
}

max_restarts=3 log="" attempt_timeout=1800 linger=15
while [ $# -gt 0 ]; do
  case "$1" in
    --max-restarts) [ $# -ge 2 ] || die "--max-restarts needs a value"; max_restarts=$2; shift 2 ;;
    --log) [ $# -ge 2 ] || die "--log needs a value"; log=$2; shift 2 ;;
    --timeout) [ $# -ge 2 ] || die "--timeout needs a value"; attempt_timeout=$2; shift 2 ;;
    --linger) [ $# -ge 2 ] || die "--linger needs a value"; linger=$2; shift 2 ;;
    --) shift; break ;;
    -h | --help) usage ;;
    *) die "unknown option '$1' (the job's command goes after --)" ;;
  esac
done
[[ "$max_restarts" =~ ^[0-9]+$ ]] && [ "$max_restarts" -le 100 ] ||
  die "--max-restarts: expected 0..100, got '$max_restarts'"
[[ "$attempt_timeout" =~ ^[1-9][0-9]*$ ]] || die "--timeout: expected whole seconds > 0, got '$attempt_timeout'"
[[ "$linger" =~ ^[1-9][0-9]*$ ]] || die "--linger: expected whole seconds > 0, got '$linger'"
[ $# -gt 0 ] || die "give the job's command after -- (e.g. -- mpirun -np 4 build/zerotrain train CONFIG)"
cmd=("$@")
has_train=0 has_recover=0 run_dir="" prev=""
for a in "${cmd[@]}"; do
  [ "$a" = train ] && has_train=1
  [ "$a" = --recover ] && has_recover=1
  [ "$prev" = --run-dir ] && run_dir=$a
  case "$a" in --run-dir=*) run_dir=${a#--run-dir=} ;; esac
  prev=$a
done
[ "$has_train" = 1 ] || die "the command runs no 'zerotrain train' (nothing to recover)"
if [ -n "$log" ]; then
  : >>"$log" 2>/dev/null || die "--log '$log': cannot append to it"
fi

child=""
end_attempt() {  # the attempt's whole process group: TERM, then KILL
  kill -TERM -- "-$child" 2>/dev/null
  for _ in $(seq 50); do kill -0 "$child" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL -- "-$child" 2>/dev/null
}
stop() {
  [ -n "$child" ] && end_attempt && wait "$child"
  echo "supervise.sh: stopped by a signal" >&2
  exit 130
}
records_written() { [ -n "$run_dir" ] && compgen -G "$run_dir/failure/rank_*.json" >/dev/null; }
trap stop INT TERM

recover=$has_recover
for ((attempt = 0; attempt <= max_restarts; attempt++)); do
  run=("${cmd[@]}")
  [ "$recover" = 1 ] && [ "$has_recover" = 0 ] && run+=(--recover)
  start=$(date +%s.%N)
  # Its own process group, so that ending it reaches everything it started here.
  setsid timeout --kill-after=10 "$attempt_timeout" "${run[@]}" &
  child=$!
  seen="" ended_lingering=false
  while kill -0 "$child" 2>/dev/null; do
    if [ -z "$seen" ] && records_written; then seen=$(date +%s); fi
    if [ -n "$seen" ] && [ $(($(date +%s) - seen)) -ge "$linger" ]; then
      echo "supervise.sh: attempt $attempt wrote failure records $linger s ago and still runs: ending it" >&2
      end_attempt
      ended_lingering=true
      break
    fi
    sleep 0.1
  done
  wait "$child"
  rc=$?
  child=""
  end=$(date +%s.%N)
  records=null
  if records_written; then
    records="\"$run_dir/failure.attempt-$attempt\""
    rm -rf "$run_dir/failure.attempt-$attempt"
    mv "$run_dir/failure" "$run_dir/failure.attempt-$attempt"
  fi
  if [ -n "$log" ]; then
    printf '{"attempt": %d, "start": %s, "end": %s, "exit": %d, "recover": %s, "ended_lingering": %s, "failure_records": %s}\n' \
      "$attempt" "$start" "$end" "$rc" "$([ "$recover" = 1 ] && echo true || echo false)" \
      "$ended_lingering" "$records" >>"$log"
  fi
  case "$rc" in
    0) exit 0 ;;
    2) echo "supervise.sh: attempt $attempt exited 2 (a config or data error): not relaunched" >&2; exit 2 ;;
  esac
  if [ "$attempt" -lt "$max_restarts" ]; then
    echo "supervise.sh: attempt $attempt exited $rc; relaunching with --recover ($((max_restarts - attempt)) left)" >&2
  fi
  recover=1
done
echo "supervise.sh: gave up after $max_restarts restarts (last exit $rc)" >&2
exit "$rc"
