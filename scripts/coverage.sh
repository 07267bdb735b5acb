#!/usr/bin/env bash
# `make coverage`, after the gcov build (build.mk COVERAGE=1 NO_CUDA=1) into
# BUILD_DIR: clears old counters, runs the unit tests, the [mpi] tests at
# W = 1..4 and the fast end-to-end scripts against that build, then writes an
# lcov report (BUILD_DIR/coverage/index.html, BUILD_DIR/coverage/src.info) and
# prints lines and functions covered for model/, data/, zero/ and train/.
# A failing test is reported but does not stop the report (the counters of what
# ran are still worth reading); the exit status is non-zero if anything failed.
set -u
if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build=$1
out=$build/coverage
logdir=$build/test-logs
# The fast end-to-end scripts (seconds each at -O2); the slower ones (kill and
# resume loops, disk-full, sweeps, HellaSwag, DeepSpeed, emulated clusters) are
# left to `make test`.
E2E_FAST=(train_tiny cli_errors export_eval fault_injection recompute explain_cli hostile_inputs
          commbench_cli)

export ZT_BIN=$build/zerotrain ZT_DATA_DIR=$build/data/kjv
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
mkdir -p "$logdir" "$out"
lcov -q --zerocounters --directory "$build/obj" >/dev/null 2>&1
find "$build/obj" -name '*.gcda' -delete

failed=()
step() {  # label log command...
  local label=$1 log=$2 start=$SECONDS
  shift 2
  if "$@" >"$log" 2>&1; then
    echo "  $label: ok ($((SECONDS - start)) s)"
  else
    echo "  $label: FAILED ($((SECONDS - start)) s, log: $log)"
    failed+=("$label")
  fi
}
scripts/prepare_default_corpus.sh "$build" >"$logdir/corpus.log" 2>&1 ||
  echo "  corpus: failed (log: $logdir/corpus.log); the end-to-end scripts will fail"
echo "== coverage: tests against $build"
step "unit" "$logdir/unit.log" "$build/tests" '~[mpi]'
for w in 1 2 3 4; do
  step "mpi W=$w" "$logdir/mpi_w$w.log" timeout 1800 mpirun -np "$w" "$build/tests" '[mpi]'
done
for name in "${E2E_FAST[@]}"; do
  step "$name" "$logdir/$name.log" timeout 900 bash "tests/e2e/$name.sh"
done

echo "== coverage: lcov"
rc=(--rc lcov_branch_coverage=1)
if ! lcov -q "${rc[@]}" --capture --directory "$build/obj" --base-directory . \
    --output-file "$out/all.info" >"$logdir/lcov.log" 2>&1 ||
   ! lcov -q "${rc[@]}" --extract "$out/all.info" "$PWD/model/*" "$PWD/data/*" "$PWD/zero/*" \
    "$PWD/train/*" --output-file "$out/src.info" >>"$logdir/lcov.log" 2>&1; then
  echo "coverage: lcov failed (log: $logdir/lcov.log)"
  exit 1
fi
genhtml -q "${rc[@]}" --prefix "$PWD" --title zerotrain --output-directory "$out" "$out/src.info" \
  >"$logdir/genhtml.log" 2>&1 || echo "coverage: genhtml failed (log: $logdir/genhtml.log)"

# "  lines......: 85.3% (1234 of 1446 lines)" -> "85.3% (1234/1446)"
rate() { sed -n "s/^ *$1\.*: \([0-9.]*%\) (\([0-9]*\) of \([0-9]*\).*/\1 (\2\/\3)/p"; }
printf '%-8s %-24s %-24s %s\n' folder lines functions branches
for d in model data zero train all; do
  if [ "$d" = all ]; then
    info=$out/src.info
  else
    info=$out/$d.info
    lcov -q "${rc[@]}" --extract "$out/src.info" "$PWD/$d/*" --output-file "$info" >/dev/null 2>&1
  fi
  s=$(lcov "${rc[@]}" --summary "$info" 2>&1)
  label=$d/
  [ "$d" = all ] && label=total
  printf '%-8s %-24s %-24s %s\n' "$label" "$(rate lines <<<"$s")" "$(rate functions <<<"$s")" \
    "$(rate branches <<<"$s")"
done
echo "HTML: $out/index.html"
for f in "${failed[@]+"${failed[@]}"}"; do echo "FAILED: $f"; done
[ ${#failed[@]} -eq 0 ]
