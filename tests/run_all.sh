#!/usr/bin/env bash
# Runs every test: the Catch2 unit tests in one process, the [mpi] tests under
# mpirun at W = 1..4, then the end-to-end scripts in tests/e2e/. Ends with one
# line "N passed, N failed" and a non-zero exit if anything failed.
set -u
BUILD=${BUILD:-build}
export ZT_BIN=${ZT_BIN:-$BUILD/zerotrain} ZT_DATA_DIR=${ZT_DATA_DIR:-$BUILD/data/kjv}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # containers often forbid CMA
logdir=$BUILD/test-logs
mkdir -p "$logdir"
passed=0
failed=0
failures=()

# Adds the test-case counts of one Catch2 run to the totals.
count_catch() {  # label logfile exit_code
  local label=$1 log=$2 rc=$3 p=0 f=0 line
  line=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^(All tests passed|test cases:)' | tail -1)
  if [[ $line =~ All\ tests\ passed.*in\ ([0-9]+)\ test\ case ]]; then
    p=${BASH_REMATCH[1]}
  elif [[ $line =~ test\ cases:\ +([0-9]+)\ \|\ +([0-9]+)\ passed\ \|\ +([0-9]+)\ failed ]]; then
    p=${BASH_REMATCH[2]}
    f=${BASH_REMATCH[3]}
  elif [[ $line =~ test\ cases:\ +([0-9]+)\ \|\ +([0-9]+)\ failed ]]; then
    f=${BASH_REMATCH[2]}
  fi
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi  # crashed or aborted
  passed=$((passed + p))
  failed=$((failed + f))
  [ "$f" -gt 0 ] && failures+=("$label (log: $log)")
  echo "  $label: $p passed, $f failed"
  # CI keeps only this output: name the seed and each failed check.
  if [ "$f" -gt 0 ]; then
    sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E -A4 '^\[tests\] seed|FAILED:' | head -60 | sed 's/^/    /'
  fi
}

echo "== unit tests"
"$BUILD/tests" '~[mpi]' >"$logdir/unit.log" 2>&1
count_catch "unit" "$logdir/unit.log" $?
grep -h '^SKIPPED' "$logdir/unit.log" | sort -u | sed 's/^/  /'

for w in 1 2 3 4; do
  echo "== [mpi] tests, W = $w"
  # Under `make test-asan`, LeakSanitizer's stop-the-world tracer crashes at exit
  # in 4-rank oversubscribed jobs (signal 11 in the tracer, after every test
  # passed); multi-rank runs keep the address and UB checks, without leak checks.
  extra_env=()
  if [ "$w" -gt 1 ] && [ -n "${LSAN_OPTIONS:-}" ]; then
    extra_env=("ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0")
  fi
  env "${extra_env[@]+"${extra_env[@]}"}" timeout 900 mpirun -np "$w" "$BUILD/tests" '[mpi]' \
    >"$logdir/mpi_w$w.log" 2>&1
  count_catch "mpi W=$w" "$logdir/mpi_w$w.log" $?
done

echo "== end-to-end"
for t in tests/e2e/*.sh; do
  name=$(basename "$t" .sh)
  start=$(date +%s)
  if timeout 900 bash "$t" >"$logdir/$name.log" 2>&1; then
    passed=$((passed + 1))
    echo "  $name: PASS ($(($(date +%s) - start)) s)"
  else
    failed=$((failed + 1))
    failures+=("$name (log: $logdir/$name.log)")
    echo "  $name: FAIL ($(($(date +%s) - start)) s)"
    tail -5 "$logdir/$name.log" | sed 's/^/    /'
  fi
done

for f in "${failures[@]+"${failures[@]}"}"; do echo "FAILED: $f"; done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
