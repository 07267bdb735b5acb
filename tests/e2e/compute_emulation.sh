# Compute emulation (system.compute: emulate) end to end: at W = 1..4, for
# every stage and the gradient paths that issue different calls, an emulated
# run issues exactly the collectives of a real run, call for call on every
# rank (the comm traces, which hold no times, are identical); its outputs say
# it is emulated and hold no loss; its measured compute is at least the
# stated duration; bad emulation settings are one-line errors. A tensor
# shard's calls are compared the same way.
. "$(dirname "$0")/../support/e2e_lib.sh"
EMULATE=(--set system.compute=emulate --set system.emulate_micro_step_ms=2
         --set system.emulate_optimizer_ms=1)
run() {  # NAME W ARGS...
  local name=$1 w=$2
  shift 2
  mpirun -np "$w" "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/$name" "${SMALL[@]}" \
    --set train.steps=2 --set system.comm_trace=true "$@" >"$WORK/$name.txt" 2>&1 ||
    { cat "$WORK/$name.txt"; fail "$name: train exited $?"; }
}
variants=(
  "s0|--set zero.stage=0 --set zero.reduce_bucket_size=7000"
  "s1_per_owner|--set zero.stage=1 --set zero.reduce_scatter=true --set zero.use_multi_rank_bucket_allreduce=false --set zero.reduce_bucket_size=7000"
  "s2_default_overlap|--set zero.stage=2 --set zero.overlap_comm=true --set zero.reduce_bucket_size=7000"
  "s2_native_rs|--set zero.stage=2 --set zero.native_reduce_scatter=true"
  "s3_prefetch|--set zero.stage=3 --set zero.stage3_param_persistence_threshold=0 --set zero.stage3_prefetch_bucket_size=20000"
)
compared=0
for w in 1 2 3 4; do
  for v in "${variants[@]}"; do
    name=${v%%|*}
    read -ra args <<<"${v#*|}"
    run "real_${name}_w$w" "$w" "${args[@]}"
    run "emu_${name}_w$w" "$w" "${args[@]}" "${EMULATE[@]}"
    for ((r = 0; r < w; r++)); do
      real=$WORK/real_${name}_w$w/comm_trace_rank$r.jsonl emu=$WORK/emu_${name}_w$w/comm_trace_rank$r.jsonl
      [ "$w" = 1 ] || [ -s "$real" ] || fail "$name W=$w: rank $r traced no call"
      cmp -s "$real" "$emu" || fail "$name W=$w rank $r: emulated calls differ from real: $(diff "$real" "$emu" | head -4)"
      compared=$((compared + $(wc -l <"$real")))
    done
  done
done
echo "compute emulation: $compared traced calls identical to real runs (5 variants, W = 1..4)"
# Recomputed forwards inside the backward move stage 3's gathers: emulated too.
run real_recompute 2 --set zero.stage=3 --set zero.stage3_param_persistence_threshold=0 --set train.recompute=block
run emu_recompute 2 --set zero.stage=3 --set zero.stage3_param_persistence_threshold=0 --set train.recompute=block "${EMULATE[@]}"
for r in 0 1; do
  cmp -s "$WORK/real_recompute/comm_trace_rank$r.jsonl" "$WORK/emu_recompute/comm_trace_rank$r.jsonl" ||
    fail "recompute block: emulated calls differ from real on rank $r"
done

# Tensor parallelism: a shard makes the real shard's combines (the tensor
# group's all-reduces) at their places among ZeRO's calls, recomputed
# forwards included.
tensor_calls=0
for v in "tp2_s1|2|--set parallel.tensor=2 --set zero.stage=1" \
  "tp2_d2_s3_recompute|4|--set parallel.tensor=2 --set zero.stage=3 --set zero.stage3_param_persistence_threshold=0 --set train.recompute=block"; do
  IFS='|' read -r name w rest <<<"$v"
  read -ra args <<<"$rest"
  run "real_$name" "$w" "${args[@]}"
  run "emu_$name" "$w" "${args[@]}" "${EMULATE[@]}"
  for ((r = 0; r < w; r++)); do
    real=$WORK/real_$name/comm_trace_rank$r.jsonl emu=$WORK/emu_$name/comm_trace_rank$r.jsonl
    grep -q '"dim":"tensor"' "$real" || fail "$name: rank $r traced no tensor-parallel call"
    cmp -s "$real" "$emu" || fail "$name rank $r: emulated calls differ from real: $(diff "$real" "$emu" | head -4)"
    tensor_calls=$((tensor_calls + $(grep -c '"dim":"tensor"' "$real")))
  done
done
echo "compute emulation: tensor parallelism's $tensor_calls tensor-group calls identical to real runs (T = 2, W = 2 and 4)"

# Every output says so, and no loss is pretended.
out=$WORK/emu_s2_default_overlap_w2
grep -q '"compute_mode": *"emulated"' "$out/summary.json" || fail "summary.json lacks compute_mode emulated"
grep -q '"final_train_loss": *null' "$out/summary.json" || fail "summary.json has a loss"
grep -q '"compute_mode": *"real"' "$WORK/real_s0_w2/summary.json" || fail "a real run's summary lacks compute_mode real"
[ -z "$(losses "$out/metrics.jsonl" | grep -v null)" ] || fail "metrics.jsonl has losses: $(losses "$out/metrics.jsonl")"
grep -q "^compute: EMULATED" "$out.txt" || fail "the start lines do not say EMULATED"
grep -q "compute emulated: no loss" "$out.txt" || fail "the step lines do not say emulated"

# The measured compute of a micro-step is at least the stated wait (sleeping
# never returns early); a run's durations can come from another run's summary.
run emu_from 2 --set zero.stage=1 --set system.compute=emulate \
  --set "system.emulate_from=$WORK/real_s0_w1/summary.json" --set system.emulate_time_scale=3
/usr/bin/python3 - "$WORK/real_s0_w1/summary.json" "$WORK/emu_from/summary.json" <<'PY' || fail "emulate_from: durations"
import json, sys
ref, emu = (json.load(open(p)) for p in sys.argv[1:])
stated = emu["emulated_compute"]
want = 3 * ref["timing"]["compute_ms_per_micro_step"]
assert abs(stated["micro_step_ms"] - want) <= 1e-9 * want, (stated, want)
assert stated["time_scale"] == 3 and stated["device"] == "cpu", stated
assert emu["timing"]["compute_ms_per_micro_step"] >= stated["micro_step_ms"] - 1e-3, emu["timing"]
print("emulate_from: %.3f ms stated (3 x %.3f measured), %.3f ms measured per micro-step" %
      (stated["micro_step_ms"], ref["timing"]["compute_ms_per_micro_step"],
       emu["timing"]["compute_ms_per_micro_step"]))
PY

bad() {  # what expected-text overrides...
  local what=$1 want=$2
  shift 2
  expect_error "$what" "$want" "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/bad" "${SMALL[@]}" "$@"
}
bad "compute bogus" "system.compute=gpu: expected one of real, emulate, got 'gpu'" --set system.compute=gpu
bad "no durations" "got neither" --set system.compute=emulate
bad "two sources" "got both" --set system.compute=emulate --set system.emulate_micro_step_ms=3 \
  --set "system.emulate_from=$WORK/real_s0_w1/summary.json"
bad "another model" "measured for 2 layers, 4 heads, width 64" --set system.compute=emulate \
  --set "system.emulate_from=$WORK/real_s0_w1/summary.json" --set model.n_embd=32
bad "missing file" "$WORK/none.json" --set system.compute=emulate --set "system.emulate_from=$WORK/none.json"
bad "offload" "offload moves work to the host" --set system.compute=emulate \
  --set system.emulate_micro_step_ms=3 --set zero.stage=2 --set zero.offload_optimizer.device=cpu
bad "fraction" "emulate_forward_fraction" --set system.compute=emulate \
  --set system.emulate_micro_step_ms=3 --set system.emulate_forward_fraction=1
expect_error "resume" "--resume: system.compute: emulate trains no weights" \
  "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/bad" "${SMALL[@]}" --resume "${EMULATE[@]}"
echo "compute emulation: $expect_error_count bad settings refused in one line"
