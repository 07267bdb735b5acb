# Pipeline parallelism end to end: with parallel.pipeline, ZeRO stages 0 and 1
# train to the losses (and validation losses, gradient norms and clipped
# steps) of the same run without it, within fp32 rounding, under both
# schedules, alone and with data and tensor parallelism beside it; summary.json counts the pipeline's messages apart
# from ZeRO's, as many as `plan` lists, reports the bubble beside its formula,
# and the stage's activations equal the formula; what a pipeline does not run
# with yet, and DeepSpeed's refusal of ZeRO-2 and -3 under a pipeline, are
# refused in one line.
. "$(dirname "$0")/../support/e2e_lib.sh"
PP=(--set train.grad_clip=0 --set train.steps=3 --set train.eval_every=3 --set train.eval_batches=2)
run() {  # NAME RANKS ARGS...
  local name=$1 ranks=$2
  shift 2
  mpirun -np "$ranks" "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/$name" "${SMALL[@]}" \
    "${PP[@]}" "$@" >"$WORK/$name.txt" 2>&1 || { cat "$WORK/$name.txt"; fail "$name: train exited $?"; }
}
same_losses() {  # A B [CLIP]: the training and validation losses and the gradient norms
  /usr/bin/python3 - "$WORK/$1/metrics.jsonl" "$WORK/$2/metrics.jsonl" "${3:-0}" <<'PY' || fail "$1 against $2: losses or norms differ"
import json, sys
def records(p):
    recs = [json.loads(l) for l in open(p)]
    return [r for r in recs if "loss" in r], [r["val_loss"] for r in recs if r.get("val_loss") is not None]
(a, va), (b, vb) = (records(p) for p in sys.argv[1:3])
clip = float(sys.argv[3])
print("  losses", [x["loss"] for x in a], va, "against", [y["loss"] for y in b], vb)
print("  norms", [x["grad_norm"] for x in a], "against", [y["grad_norm"] for y in b])
close = lambda x, y: len(x) == len(y) and all(abs(p - q) <= 2e-5 * abs(q) for p, q in zip(x, y))
norms = all(abs(x["grad_norm"] - y["grad_norm"]) <= 1e-4 * y["grad_norm"] for x, y in zip(a, b))
clipped = clip == 0 or any(y["grad_norm"] > clip for y in b)
sys.exit(0 if len(a) == 3 and len(va) >= 1 and close([x["loss"] for x in a], [y["loss"] for y in b])
         and close(va, vb) and norms and clipped else 1)
PY
}
summary() {  # RUN PYTHON-EXPRESSION-OF-s
  /usr/bin/python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print($2)" "$WORK/$1/summary.json"
}
L4=(--set model.n_layer=4)
for stage in 0 1; do
  run "s${stage}_w1" 1 --set zero.stage="$stage"
  run "s${stage}_p2" 2 --set zero.stage="$stage" --set parallel.pipeline=2
  same_losses "s${stage}_p2" "s${stage}_w1"
  run "s${stage}_p2_gpipe" 2 --set zero.stage="$stage" --set parallel.pipeline=2 \
    --set parallel.pipeline_schedule=gpipe
  same_losses "s${stage}_p2_gpipe" "s${stage}_w1"
  run "s${stage}_d2" 2 --set zero.stage="$stage"
  run "s${stage}_d2p2" 4 --set zero.stage="$stage" --set parallel.pipeline=2
  same_losses "s${stage}_d2p2" "s${stage}_d2"
  grep -q "^grid: 2 data-parallel x 1 tensor-parallel x 2 pipeline ranks" "$WORK/s${stage}_d2p2.txt" ||
    fail "stage $stage: no grid line"
done
run l4_w1 1 "${L4[@]}" --set zero.stage=1 --set zero.overlap_comm=true
run l4_p4 4 "${L4[@]}" --set zero.stage=1 --set zero.overlap_comm=true --set parallel.pipeline=4
same_losses l4_p4 l4_w1
run l4_t2p2 4 "${L4[@]}" --set zero.stage=1 --set zero.overlap_comm=true --set parallel.pipeline=2 \
  --set parallel.tensor=2 --set train.recompute=block --set train.sample_every=0
same_losses l4_t2p2 l4_w1
# Sequence parallelism: the same losses, and every activation message between
# the stages carries the tensor shard's half of the rows (no samples, whose
# windows of odd length round the half up).
run l4_t2p2_sp 4 "${L4[@]}" --set zero.stage=1 --set zero.overlap_comm=true --set parallel.pipeline=2 \
  --set parallel.tensor=2 --set train.recompute=block --set train.sample_every=0 \
  --set parallel.sequence_parallel=true
same_losses l4_t2p2_sp l4_w1
/usr/bin/python3 - "$WORK/l4_t2p2_sp/summary.json" "$WORK/l4_t2p2/summary.json" <<'PY' || fail "sequence parallelism: the stage messages are not half as large"
import json, sys
sent = [json.load(open(p))["comm"]["per_step_by_purpose"]["activations"]["send"] for p in sys.argv[1:]]
print("  activation messages' bytes per step", sent[0]["bytes"], "against", sent[1]["bytes"])
sys.exit(0 if sent[0]["calls"] == sent[1]["calls"] > 0 and 2 * sent[0]["bytes"] == sent[1]["bytes"] else 1)
PY
# Clipping at 1.0 (the norm is about 2.6): the norm is the whole model's,
# summed over the stages with the last stage's wte copy left out.
run l4_w1_clip 1 "${L4[@]}" --set zero.stage=1 --set train.grad_clip=1.0
run l4_t2p2_clip 4 "${L4[@]}" --set zero.stage=1 --set train.grad_clip=1.0 --set parallel.pipeline=2 \
  --set parallel.tensor=2
same_losses l4_t2p2_clip l4_w1_clip 1.0

# Samples through the stages: each token's window goes forward stage by
# stage and the last stage's draw is broadcast, so 2 and 4 stages write the
# sample one rank writes.
SAMPLE=(--set zero.stage=1 --set train.sample_every=3 --set train.sample_tokens=24)
run sample_w1 1 "${SAMPLE[@]}"
run sample_p2 2 "${SAMPLE[@]}" --set parallel.pipeline=2
run sample_l4_w1 1 "${SAMPLE[@]}" "${L4[@]}"
run sample_l4_p4 4 "${SAMPLE[@]}" "${L4[@]}" --set parallel.pipeline=4
run sample_l4_t2p2_sp 4 "${SAMPLE[@]}" "${L4[@]}" --set parallel.pipeline=2 --set parallel.tensor=2 \
  --set parallel.sequence_parallel=true
sample_of() { sed -n '/^---- sample at step 3 ----$/,/^----$/p' "$WORK/$1.txt"; }
for pair in "sample_p2 sample_w1" "sample_l4_p4 sample_l4_w1" "sample_l4_t2p2_sp sample_l4_w1"; do
  set -- $pair
  [ -n "$(sample_of "$2")" ] && [ "$(sample_of "$1")" = "$(sample_of "$2")" ] ||
    fail "$1's sample differs: '$(sample_of "$1")' against '$(sample_of "$2")'"
done

# ZeRO-2 and -3 under a pipeline, which DeepSpeed's engine refuses, behind
# parallel.pipeline_zero_anyway: the losses of the same run without the
# pipeline, and rank 0's data-parallel calls per step (3 steps: the first's
# and twice the steady step's over 3) as `plan` lists them, stage 3's
# forwards and backwards gathered as passes of their own, each prefetched.
for stage in 2 3; do
  run "s${stage}_d2" 2 --set zero.stage="$stage"
  run "s${stage}_d2p2" 4 --set zero.stage="$stage" --set parallel.pipeline=2 \
    --set parallel.pipeline_zero_anyway=true
  same_losses "s${stage}_d2p2" "s${stage}_d2"
done
run s3_d2p2_noeval 4 --set zero.stage=3 --set parallel.pipeline=2 --set parallel.pipeline_zero_anyway=true \
  --set train.eval_every=0 --set zero.stage3_param_persistence_threshold=0
"$ZT_BIN" plan configs/tiny.yaml --world 4 "${SMALL[@]}" "${PP[@]}" --set zero.stage=3 --set parallel.pipeline=2 \
  --set parallel.pipeline_zero_anyway=true --set train.eval_every=0 \
  --set zero.stage3_param_persistence_threshold=0 >"$WORK/plan_s3.txt" 2>&1 || fail "plan at stage 3 with a pipeline"
/usr/bin/python3 - "$WORK/plan_s3.txt" "$WORK/s3_d2p2_noeval/summary.json" <<'PY' || fail "stage 3 under a pipeline: the run's calls are not plan's"
import json, re, sys
plan, summary = open(sys.argv[1]).read().split("\n"), json.load(open(sys.argv[2]))
block = []
for line in plan:
    if line.startswith("* stage 3"):
        block.append(line)
    elif block and line.startswith("  ") and "|" in line and not line.split("|")[0].strip():
        block.append(line)
    elif block:
        break
steady, first = {}, {}
for line in block:
    f = line.split("|")[1].split()
    (first if "(first step)" in line else steady)[f[0]] = int(f[1])
expect = {k: (first.get(k, steady.get(k, 0)) + 2 * steady.get(k, 0)) / 3 for k in set(steady) | set(first)}
got = {k: v["calls"] for k, v in summary["comm"]["per_step_by_dimension"]["data"].items() if v["calls"]}
print("  stage 3 under a pipeline, rank 0's data calls per step:", got, "plan:", expect)
# Once the first step has recorded both traces, each of the m forwards and m
# backwards prefetches the stage whole in one call.
m = int(re.search(r"(\d+) micro-steps per step", plan[0]).group(1))
print("  steady step's all-gathers:", steady.get("all_gather"), "for m =", m)
ok = steady.get("all_gather") == 2 * m
sys.exit(0 if ok and all(abs(got.get(k, 0) - v) < 1e-9 for k, v in expect.items()) and set(got) <= set(expect) else 1)
PY
# summary.json counts rank 0's calls: stage 0 sends each micro-batch's
# activation forward (12 at one data rank, 6 at two) and receives its
# gradient back, and exchanges wte's gradient with the last stage once per
# step; the validation at the last of the 3 steps sends its 2 batches.
for case in "s0_p2 12 2" "l4_p4 12 4" "s1_d2p2 6 2"; do
  set -- $case
  /usr/bin/python3 - "$WORK/$1/summary.json" "$2" "$3" <<'PY' || fail "$1: pipeline messages or bubble"
import json, sys
s = json.load(open(sys.argv[1]))
m, P = int(sys.argv[2]), int(sys.argv[3])
sends, recvs = m + 1 + 2 / 3, m + 1
got = s["comm"]["per_step_by_dimension"]["pipeline"]["send"]["calls"]
recv = s["comm"]["per_step_by_dimension"]["pipeline"]["recv"]["calls"]
bubble = s["pipeline"]["bubble_formula"]
print("  %s: rank 0 %.4f sends, %.4f receives per step (expected %.4f, %d); bubble %.4f by formula, waits %s"
      % (sys.argv[1].split("/")[-2], got, recv, sends, recvs, bubble, s["pipeline"]["recv_wait_fraction_by_stage"]))
ok = abs(got - sends) < 1e-9 and abs(recv - recvs) < 1e-9
ok = ok and abs(bubble - (P - 1) / (m + P - 1)) < 1e-12 and len(s["pipeline"]["recv_wait_fraction_by_stage"]) == P
sys.exit(0 if ok else 1)
PY
done
# Compute emulation: the same schedule, messages and ZeRO calls per step as
# the real run, no loss, every output saying so.
run s1_d2p2_emulated 4 --set zero.stage=1 --set parallel.pipeline=2 --set system.compute=emulate \
  --set system.emulate_micro_step_ms=2 --set system.emulate_optimizer_ms=1
grep -q "^compute: EMULATED" "$WORK/s1_d2p2_emulated.txt" || fail "emulated: no EMULATED line"
/usr/bin/python3 - "$WORK/s1_d2p2_emulated/summary.json" "$WORK/s1_d2p2/summary.json" <<'PY' || fail "emulated pipeline: calls differ from the real run's"
import json, sys
e, r = (json.load(open(p)) for p in sys.argv[1:])
assert e["compute_mode"] == "emulated" and e["final_train_loss"] is None
def calls(s, dim):
    return {k: v["calls"] for k, v in s["comm"]["per_step_by_dimension"][dim].items() if v["calls"]}
# The real run's validation (eval_every 3) sends 2 activations in its last
# step; the emulated run evaluates nothing.
real_pipe = calls(r, "pipeline")
real_pipe["send"] -= 2 / 3
print("  emulated", calls(e, "pipeline"), calls(e, "data"), "real", real_pipe, calls(r, "data"))
assert all(abs(calls(e, "pipeline")[k] - v) < 1e-9 for k, v in real_pipe.items())
assert calls(e, "data") == calls(r, "data")
PY
# Stage 0's activations (its slots): the ledger equals the formula.
for run in s0_p2 l4_p4 l4_t2p2; do
  summary "$run" "s['memory']['activations_per_micro_batch'] == s['memory']['activations_per_micro_batch_formula'] > 0" |
    grep -q True || fail "$run: activations measured against the formula"
done
# plan: the same messages per stage as the run counted.
"$ZT_BIN" plan configs/tiny.yaml --world 4 --calls "${SMALL[@]}" "${PP[@]}" "${L4[@]}" \
  --set parallel.pipeline=4 >"$WORK/plan.txt" 2>&1 || { cat "$WORK/plan.txt"; fail "plan exited $?"; }
grep -q "^grid: 1 data-parallel x 1 tensor-parallel x 4 pipeline ranks" "$WORK/plan.txt" ||
  fail "plan: no grid line"
grep -qE "^  0 +0\.\.0 +4 +[0-9]+ +13 +13 " "$WORK/plan.txt" || fail "plan: stage 0's row: $(grep -A6 '^pipeline over' "$WORK/plan.txt")"
grep -qE "^  2 +2\.\.2 +2 +[0-9]+ +24 +24 " "$WORK/plan.txt" || fail "plan: stage 2's row"
grep -q "tied wte gradient" "$WORK/plan.txt" || fail "plan --calls: no tied wte gradient"
# plan --network on a grid: the grid step-time model at every ZeRO stage,
# the configured one starred, DeepSpeed's refusals marked; --recovery is
# refused (memory recovery copies data-parallel replicas).
net=$(ls configs/networks/*.json | head -1)
"$ZT_BIN" plan configs/tiny.yaml --world 4 "${SMALL[@]}" "${PP[@]}" "${L4[@]}" --set parallel.pipeline=4 \
  --network "$net" --compute-ms 1,1 >"$WORK/plan_net.txt" 2>&1 || fail "plan --network with a pipeline: $(tail -2 "$WORK/plan_net.txt")"
grep -q "^grid step-time model (a prediction, not a measurement" "$WORK/plan_net.txt" || fail "plan --network: no grid table"
[ "$(grep -cE '^[* ] [0-3] +[0-9]+\.[0-9]{2} ' "$WORK/plan_net.txt")" = 4 ] || fail "plan --network: not one row per ZeRO stage"
grep -qE '^\* 0 ' "$WORK/plan_net.txt" || fail "plan --network: the configured stage 0 is not starred"
[ "$(grep -c "DeepSpeed's pipeline engine refuses it" "$WORK/plan_net.txt")" = 2 ] || fail "plan --network: refusals not marked"
out=$("$ZT_BIN" plan configs/tiny.yaml --world 4 "${SMALL[@]}" "${PP[@]}" "${L4[@]}" --set parallel.pipeline=4 \
  --recovery 2>&1) && fail "plan --recovery accepted a pipeline"
printf '%s' "$out" | grep -q "with parallel.pipeline > 1: the recovery model covers data parallelism only" ||
  fail "plan --recovery with a pipeline: $out"
train_refused "expected zero.stage 0 or 1 with parallel.pipeline 2: DeepSpeed .*PipelineEngine" 2 "${PP[@]}" \
  --set zero.stage=2 --set parallel.pipeline=2
train_refused "expected parallel.pipeline <= model.n_layer 2" 3 "${PP[@]}" --set parallel.pipeline=3
train_refused "key 'parallel.pipeline': expected a size dividing the world size 3" 3 "${PP[@]}" --set parallel.pipeline=2
train_refused "parallel.pipeline_schedule.*expected one of 1f1b, gpipe, got 'zigzag'" 1 --set parallel.pipeline_schedule=zigzag
echo "PASS pipeline_parallel"
