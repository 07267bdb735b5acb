#!/usr/bin/env bash
# The one script for the GPU machine: builds there with -j16 (no set-up: the
# machine has no network, OpenBLAS or sentencepiece), runs every GPU test
# (CUDA ops and the whole model against the CPU reference, NCCL at W = 1,
# every ZeRO stage on 2 ranks of the one GPU through the MPI communicator, and
# the tensor-parallel model and the pipeline at 2 and 4 ranks against the
# CPU's whole model),
# then the throughput benchmark, an op profile and GPT-2 350M with and without
# optimizer offload; prints a compact table last.
set -u
cd "$(dirname "$0")/.."
LOG=${OUT:-build/gpu_check}
mkdir -p "$LOG"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$(date +%s)
if ! make -k DEPS=skip JOBS=16 build >"$LOG/build.log" 2>&1 ||
   ! make -k -f build.mk BUILD=build -j16 build/tests >>"$LOG/build.log" 2>&1; then
  grep -E "error|Error" "$LOG/build.log" | head -30
  echo "gpu_check: BUILD FAILED (log: $LOG/build.log)"
  exit 1
fi
echo "build: $(($(date +%s) - t0)) s"

summary=()
run_tests() {  # label command...
  local label=$1; shift
  local log="$LOG/$label.log"
  timeout 300 "$@" >"$log" 2>&1
  local rc=$?
  local line
  line=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^(All tests passed|test cases:)' | tail -1)
  summary+=("$(printf '%-28s rc=%-3s %s' "$label" "$rc" "$line")")
  if [ $rc -ne 0 ]; then sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -B3 -A12 'FAILED' | head -60; fi
}
run_tests gpu_ops_and_model build/tests '[gpu]'
run_tests gpu_mpi_w1 build/tests '[gpu_mpi]'
run_tests gpu_mpi_w2 mpirun -np 2 build/tests '[gpu_mpi]'
run_tests gpu_grid_w4 mpirun -np 4 build/tests \
  'the CUDA tensor-parallel model matches the CPU whole model,the CUDA pipeline matches the CPU whole model'
run_tests cpu_unit build/tests '~[mpi]~[gpu]~[gpu_mpi]'
echo "tests: $(($(date +%s) - t0)) s"

scripts/bench.sh build | tee "$LOG/bench.txt" | tail -8 >"$LOG/bench_table.txt"

# Where the time goes: GPU time per op over a profiled 124M, B = 32 run.
ZT_PROFILE_OPS=1 timeout 150 build/zerotrain train configs/gpt2-124m.yaml --run-dir build/bench/profile \
  --set data.train=build/bench/data/random_000.bin --set data.val=build/bench/data/random_000.bin \
  --set system.device=cuda --set train.micro_batch=32 --set train.global_batch_tokens=32768 \
  --set train.steps=12 --set train.eval_every=0 --set train.sample_every=0 --set train.checkpoint_every=0 \
  >"$LOG/profile_run.txt" 2>"$LOG/profile.txt"
# Offload: GPT-2 350M at B = 32 on the one GPU, stage 2 with the optimizer on
# the device and in pinned host memory: tok/s, device model states (measured
# and by formula), the allocator's device peak, and the gradient bytes copied
# to the host during backward (overlapped) and at the step.
offload_rows=()
for placement in none cpu; do
  dir=build/bench/offload-$placement
  timeout 90 build/zerotrain train configs/gpt2-350m.yaml --run-dir "$dir" \
    --set data.train=build/bench/data/random_000.bin --set data.val=build/bench/data/random_000.bin \
    --set system.device=cuda --set train.micro_batch=32 --set train.global_batch_tokens=32768 \
    --set train.steps=5 --set train.eval_every=0 --set train.sample_every=0 \
    --set train.checkpoint_every=0 --set zero.stage=2 --set zero.offload_optimizer.device=$placement \
    --set zero.offload_optimizer.pin_memory=true >"$LOG/offload-$placement.txt" 2>&1
  offload_rows+=("$(python3 -c 'import json, sys
s = json.load(open(sys.argv[1])); m = s["memory"]
print("offload_optimizer %-4s %9.0f tok/s  device model states %6.2f GB (formula %6.2f)  device peak %6.2f GB  host %6.2f GB  grads to host in backward %6.3f GB, at step %6.3f GB" % (
    sys.argv[2], s["tokens_per_second"], m["model_states"] / 1e9, m["model_states_formula"] / 1e9,
    m["peak_total"] / 1e9, m["host"]["model_states"] / 1e9, m["offload_grad_bytes_early"] / 1e9,
    m["offload_grad_bytes_at_step"] / 1e9))' "$dir/summary.json" "$placement" 2>&1 ||
    echo "offload_optimizer $placement: FAILED (log: $LOG/offload-$placement.txt)")")
done

echo
echo "==== gpu_check summary ($(($(date +%s) - t0)) s) ===="
printf '%s\n' "${summary[@]}"
cat "$LOG/bench_table.txt"
echo
grep -A18 '^op profile' "$LOG/profile.txt" | head -19
grep 'summary:' "$LOG/profile_run.txt"
printf '%s\n' "${offload_rows[@]}"
