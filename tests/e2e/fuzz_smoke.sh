#!/usr/bin/env bash
# The libFuzzer targets (fuzz/), briefly: builds them with clang into
# build-fuzz/ when needed, replays every kept reproducer (fuzz/regressions/),
# then runs each target for a fixed number of inputs from a fixed seed. Fails,
# naming the reproducer, when a target crashes, leaks, hangs or runs out of
# memory, and fails when clang or libFuzzer's runtime is missing
# (scripts/install_deps.sh installs both). `make fuzz` runs them for longer.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec timeout 600 fuzz/run.sh smoke "${ZT_FUZZ_BUILD:-build-fuzz}"
