#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz.mk) and runs each one over its seed corpus.
#   fuzz/run.sh smoke [BUILD]  every target for a fixed number of runs from a
#                              fixed seed (deterministic length; tests/e2e/fuzz_smoke.sh)
#   fuzz/run.sh long [BUILD]   every target for FUZZ_SECONDS (default 60) each,
#                              growing BUILD/corpus/TARGET across runs (`make fuzz`)
# Both replay every file kept under fuzz/regressions/TARGET/ first. BUILD
# defaults to build-fuzz; FUZZ_TARGETS="a b" limits the run to some targets.
# Prints, per target: executions, coverage (libFuzzer's cov: and ft:), corpus
# size and the outcome; exits 1 when a target crashed, leaked, hung or ran out
# of memory, naming the reproducer (BUILD/findings/TARGET-*).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
build=${2:-build-fuzz}
case "$mode" in smoke | long) ;; *)
  echo "usage: fuzz/run.sh smoke|long [BUILD]" >&2
  exit 2
  ;;
esac
seconds=${FUZZ_SECONDS:-60}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

# clang and its libFuzzer runtime: scripts/install_deps.sh installs them.
clang=${FUZZ_CLANG:-clang++}
if ! command -v "$clang" >/dev/null; then
  echo "fuzz: $clang not found; install clang (scripts/install_deps.sh, or: sudo apt-get install -y clang libclang-rt-dev)" >&2
  exit 1
fi
runtime="$("$clang" -print-resource-dir)/lib/linux/libclang_rt.fuzzer-$(uname -m).a"
if [ ! -e "$runtime" ]; then
  echo "fuzz: libFuzzer's runtime $runtime is missing; install it (scripts/install_deps.sh, or: sudo apt-get install -y libclang-rt-$("$clang" -dumpversion | cut -d. -f1)-dev)" >&2
  exit 1
fi

mkdir -p "$build/logs"
if ! make --no-print-directory -f fuzz.mk FUZZ_BUILD="$build" FUZZ_CLANG="$clang" -j"$jobs" fuzz-build \
  >"$build/logs/build.log" 2>&1; then
  tail -40 "$build/logs/build.log" >&2
  echo "fuzz: building the targets failed (all of it: $build/logs/build.log)" >&2
  exit 1
fi
read -r -a all_targets <<<"$(make --no-print-directory -s -f fuzz.mk fuzz-targets)"
read -r -a targets <<<"${FUZZ_TARGETS:-${all_targets[*]}}"

# Seeds: binary ones written by the project's own writers, text ones from the
# repository's configs and reference files, plus fuzz/corpus/TARGET.
seeds="$build/seeds"
rm -rf "$seeds"
"$build/make_seeds" "$seeds"
copy_seeds() {  # TARGET PREFIX FILE...: each file, PREFIX put before its bytes
  local target=$1 prefix=$2 f
  shift 2
  mkdir -p "$seeds/$target"
  for f in "$@"; do
    [ -f "$f" ] || continue
    { printf '%s' "$prefix"; cat "$f"; } >"$seeds/$target/${prefix:+p}$(printf '%s' "$f" | tr '/' '_')"
  done
}
shopt -s nullglob
ds_json=(configs/deepspeed/*.json)
network_json=(configs/networks/*.json docs/pmbs_cluster/*/commbench.json)
cluster_json=(docs/pmbs_cluster/*/cluster.json)
summary_json=(docs/pmbs_cluster/*/*summary.json)
mapfile -t yaml < <(find configs -name '*.yaml' | sort)
copy_seeds config_file "" "${yaml[@]}"
copy_seeds deepspeed_import "" "${ds_json[@]}"
copy_seeds network_file "" "${network_json[@]}" "${cluster_json[@]}"
copy_seeds cluster_description "" "${cluster_json[@]}"
copy_seeds run_summary "" "${summary_json[@]}"
# json_reader: the first byte picks the dialect (even: strict JSON, odd: Hjson).
all_json=("${ds_json[@]}" "${network_json[@]}" "${cluster_json[@]}" "${summary_json[@]}")
copy_seeds json_reader " " "${all_json[@]}"
copy_seeds json_reader "!" "${ds_json[@]}"

# Per-input limits: a hang is a finding after 60 s (inputs take milliseconds;
# the margin is for a loaded machine); so is any single allocation
# over 512 MiB or a resident size over 2 GiB (no seed needs more than a few MiB).
limits=(-timeout=60 -rss_limit_mb=2048 -malloc_limit_mb=512 -print_final_stats=1)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Smoke runs per target: enough to mutate every seed; fewer for the 50,256-line vocabulary.
smoke_runs() {
  case "$1" in
    tiktoken_vocab) echo "${FUZZ_RUNS_LARGE:-60}" ;;
    *) echo "${FUZZ_RUNS:-4000}" ;;
  esac
}

# Each target's scratch files (the inputs written for parsers that read a path):
# in memory where /dev/shm is writable (a busy disk once stalled an open() for
# seconds), under a name fixed for this build directory, so that runs repeat.
scratch_base=${TMPDIR:-/tmp}
[ -d /dev/shm ] && [ -w /dev/shm ] && scratch_base=/dev/shm
scratch="$scratch_base/zt-fuzz-$(realpath "$build" | cksum | cut -d' ' -f1)"
trap 'rm -rf "$scratch"' EXIT

findings="$build/findings"
mkdir -p "$findings"
failed=()
printf '%-22s %10s %8s %8s %8s  %s\n' target runs cov ft corpus outcome
for t in "${targets[@]}"; do
  bin="$build/$t"
  [ -x "$bin" ] || { echo "fuzz: no target $t (targets: ${all_targets[*]})" >&2; exit 2; }
  log="$build/logs/$t.log"
  mkdir -p "$seeds/$t"
  dirs=("$seeds/$t")
  [ -d "fuzz/corpus/$t" ] && dirs+=("fuzz/corpus/$t")
  # Regressions first: each kept reproducer must now pass.
  regressions=(fuzz/regressions/"$t"/*)
  if [ ${#regressions[@]} -gt 0 ] &&
    ! ZT_FUZZ_SCRATCH="$scratch/$t" timeout 300 "$bin" "${limits[@]}" "${regressions[@]}" >"$build/logs/$t.regressions.log" 2>&1; then
    printf '%-22s %10s %8s %8s %8s  %s\n' "$t" - - - - "REGRESSION (see $build/logs/$t.regressions.log)"
    failed+=("$t")
    continue
  fi
  if [ "$mode" = smoke ]; then
    work=$(mktemp -d)
    run=(-seed=1 -runs="$(smoke_runs "$t")")
    bound=300
  else
    work="$build/corpus/$t"
    mkdir -p "$work"
    run=(-max_total_time="$seconds")
    bound=$((seconds + 120))
  fi
  rc=0
  ZT_FUZZ_SCRATCH="$scratch/$t" timeout "$bound" "$bin" "${limits[@]}" "${run[@]}" -artifact_prefix="$findings/$t-" \
    "$work" "${dirs[@]}" >"$log" 2>&1 || rc=$?
  [ "$mode" = smoke ] && rm -rf "$work"
  stats=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$stats")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$stats")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$stats")
  if [ "$rc" -eq 0 ]; then
    outcome="nothing found"
    [ ${#regressions[@]} -gt 0 ] && outcome+=" (${#regressions[@]} kept reproducers pass)"
  else
    reproducer=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    outcome="FOUND (exit $rc): ${reproducer:-no reproducer; see $log}"
    failed+=("$t")
  fi
  printf '%-22s %10s %8s %8s %8s  %s\n' "$t" "${runs:--}" "${cov:--}" "${ft:--}" "${corp:--}" "$outcome"
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in: ${failed[*]}. Logs: $build/logs/TARGET.log; replay one with: $build/TARGET REPRODUCER" >&2
  exit 1
fi
