# Tensor parallelism end to end: with parallel.tensor: 2, every ZeRO stage
# trains to the losses and gradient norms of the same run without it (2
# tensor ranks against 1 rank; 2 data x 2 tensor against 2 data-parallel
# ranks), within fp32 rounding, also when train.grad_clip clips; summary.json
# counts the tensor group's calls apart from ZeRO's, as many as the model's
# combine points and the norm's sum make; what the grid does not run with yet
# is refused in one line.
. "$(dirname "$0")/../support/e2e_lib.sh"
TP=(--set train.grad_clip=0 --set train.steps=3)
run() {  # NAME RANKS STAGE TENSOR [MORE-ARGS...]
  local name=$1 ranks=$2 stage=$3 tensor=$4
  shift 4
  mpirun -np "$ranks" "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/$name" "${SMALL[@]}" \
    "${TP[@]}" --set zero.stage="$stage" --set parallel.tensor="$tensor" "$@" >"$WORK/$name.txt" 2>&1 ||
    { cat "$WORK/$name.txt"; fail "$name: train exited $?"; }
}
# The same losses and gradient norms (the whole model's, summed over the
# tensor group); with CLIP, the reference's norms must pass it at some step.
same_losses() {  # A B [CLIP]
  /usr/bin/python3 - "$WORK/$1/metrics.jsonl" "$WORK/$2/metrics.jsonl" "${3:-0}" <<'PY' || fail "$1 against $2: losses or norms differ"
import json, sys
a, b = ([json.loads(l) for l in open(p) if '"loss"' in l] for p in sys.argv[1:3])
clip = float(sys.argv[3])
print("  losses", [x["loss"] for x in a], "against", [y["loss"] for y in b])
print("  norms", [x["grad_norm"] for x in a], "against", [y["grad_norm"] for y in b])
close = lambda k, tol: all(abs(x[k] - y[k]) <= tol * abs(y[k]) for x, y in zip(a, b))
clipped = clip == 0 or any(y["grad_norm"] > clip for y in b)
sys.exit(0 if len(a) == len(b) == 3 and close("loss", 2e-5) and close("grad_norm", 1e-4) and clipped else 1)
PY
}
per_step() {  # RUN DIMENSION PRIMITIVE -> calls per step
  /usr/bin/python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print(int(round(s['comm']['per_step_by_dimension'][sys.argv[2]][sys.argv[3]]['calls'])))" \
    "$WORK/$1/summary.json" "$2" "$3"
}
for stage in 0 1 2 3; do
  run "s${stage}_w1" 1 "$stage" 1
  run "s${stage}_t2" 2 "$stage" 2
  same_losses "s${stage}_t2" "s${stage}_w1"
  run "s${stage}_d2" 2 "$stage" 1
  run "s${stage}_d2t2" 4 "$stage" 2
  same_losses "s${stage}_d2t2" "s${stage}_d2"
  # Clipping at 1.0: the norm is the whole model's, so the clipped steps match.
  run "s${stage}_w1_clip" 1 "$stage" 1 --set train.grad_clip=1.0
  run "s${stage}_t2_clip" 2 "$stage" 2 --set train.grad_clip=1.0
  same_losses "s${stage}_t2_clip" "s${stage}_w1_clip" 1.0
  grep -q "^grid: 2 data-parallel x 2 tensor-parallel x 1 pipeline ranks (tensor-inner)" "$WORK/s${stage}_d2t2.txt" ||
    fail "stage $stage: no grid line"
done
# 2 layers, 12 micro-steps at 1 data rank (6 at 2): per micro-step the forward
# sums the embedding and 2 projections per layer (5) plus the target logit,
# the backward the LM head's and 2 input gradients per layer (5): 11 sums and
# one gather of the log-sum-exp; once a step, the gradient norm's sum of squares.
for case in "s0_t2 12" "s3_d2t2 6"; do
  set -- $case
  [ "$(per_step "$1" tensor all_reduce)" -eq $((11 * $2 + 1)) ] || fail "$1: tensor all_reduce calls $(per_step "$1" tensor all_reduce), expected $((11 * $2 + 1))"
  [ "$(per_step "$1" tensor all_gather)" -eq "$2" ] || fail "$1: tensor all_gather calls"
  [ "$(per_step "$1" data all_reduce)" -gt 0 ] || [ "$(per_step "$1" data reduce_scatter)" -gt 0 ] ||
    [ "$1" = s0_t2 ] || fail "$1: no data-parallel calls counted"
done
# The shard's activations: the ledger equals the formula at the shard's widths.
for run in s0_t2 s3_d2t2; do
  m=$(grep -o '"activations_per_micro_batch": *[0-9]*' "$WORK/$run/summary.json" | grep -o '[0-9]*$')
  f=$(grep -o '"activations_per_micro_batch_formula": *[0-9]*' "$WORK/$run/summary.json" | grep -o '[0-9]*$')
  [ -n "$m" ] && [ "$m" = "$f" ] || fail "$run: activations measured '$m', formula '$f'"
done
# plan lists the same tensor calls per step as the run counted.
"$ZT_BIN" plan configs/tiny.yaml --world 4 "${SMALL[@]}" "${TP[@]}" --set zero.stage=3 \
  --set parallel.tensor=2 >"$WORK/plan.txt" 2>&1 || { cat "$WORK/plan.txt"; fail "plan exited $?"; }
grep -q "^grid: 2 data-parallel x 2 tensor-parallel x 1 pipeline ranks" "$WORK/plan.txt" || fail "plan: no grid line"
grep -qE "^  all_reduce +67 " "$WORK/plan.txt" || fail "plan: tensor all_reduce calls: $(grep -A4 '^tensor parallelism' "$WORK/plan.txt")"
grep -qE "^  all_gather +6 " "$WORK/plan.txt" || fail "plan: tensor all_gather calls"
# ZeRO++'s and MiCS's groups inside the data-parallel group (2 data x 2
# tensor against 2 data-parallel ranks): hpZ's secondary partition, MiCS's
# shard groups and qgZ's node groups (on one node qgZ falls back to the
# reduce-scatter, as DeepSpeed's does) give the same losses.
for zpp in "hpz --set zero.zero_hpz_partition_size=2" "mics --set zero.mics_shard_size=2" \
  "qgz --set zero.zero_quantized_gradients=true"; do
  set -- $zpp
  name=$1
  shift
  run "s3_d2_$name" 2 3 1 "$@"
  run "s3_d2t2_$name" 4 3 2 "$@"
  same_losses "s3_d2t2_$name" "s3_d2_$name"
done
# Sampling: every shard gets the whole vocabulary's logits, so 2 tensor
# ranks write the sample one rank writes.
SAMPLE=(--set train.sample_every=3 --set train.sample_tokens=24)
run w1_sample 1 1 1 "${SAMPLE[@]}"
run t2_sample 2 1 2 "${SAMPLE[@]}"
sample_of() { sed -n '/^---- sample at step 3 ----$/,/^----$/p' "$WORK/$1.txt"; }
[ -n "$(sample_of w1_sample)" ] && [ "$(sample_of w1_sample)" = "$(sample_of t2_sample)" ] ||
  fail "samples differ: '$(sample_of w1_sample)' against '$(sample_of t2_sample)'"
# Sequence parallelism: the same losses and norms again. Per micro-step (2
# layers) the forward reduce-scatters the embedding and 2 projections per
# layer (5) and gathers the 2L + 1 LayerNorm outputs (5), the backward
# mirrors both (5 and 5) and gathers every LayerNorm's kept rows again for
# the weight gradients after them (2L + 1 = 5), each LayerNorm's gradients
# are all-reduced (5) with the target logit, and the log-sum-exp is gathered
# as before; recompute `attn` gathers ln_1's output again (2). plan lists as
# many.
SP=(--set parallel.sequence_parallel=true)
run s1_t2_sp 2 1 2 "${SP[@]}"
same_losses s1_t2_sp s1_w1
run s3_d2t2_sp 4 3 2 "${SP[@]}" --set train.recompute=attn
same_losses s3_d2t2_sp s3_d2
for case in "s1_t2_sp 12 0" "s3_d2t2_sp 6 2"; do
  set -- $case
  for want in "reduce_scatter $((10 * $2))" "all_gather $(((16 + $3) * $2))" "all_reduce $((6 * $2 + 1))"; do
    set -- $case $want
    [ "$(per_step "$1" tensor "$4")" -eq "$5" ] || fail "$1: tensor $4 calls $(per_step "$1" tensor "$4"), expected $5"
  done
  m=$(grep -o '"activations_per_micro_batch": *[0-9]*' "$WORK/$1/summary.json" | grep -o '[0-9]*$')
  f=$(grep -o '"activations_per_micro_batch_formula": *[0-9]*' "$WORK/$1/summary.json" | grep -o '[0-9]*$')
  [ -n "$m" ] && [ "$m" = "$f" ] || fail "$1: activations measured '$m', formula '$f'"
done
# The residual stream at half the rows: fewer activation bytes than without.
a_sp=$(grep -o '"activations_per_micro_batch": *[0-9]*' "$WORK/s1_t2_sp/summary.json" | grep -o '[0-9]*$')
a_tp=$(grep -o '"activations_per_micro_batch": *[0-9]*' "$WORK/s1_t2/summary.json" | grep -o '[0-9]*$')
[ "$a_sp" -lt "$a_tp" ] || fail "sequence parallelism keeps $a_sp activation bytes, tensor parallelism alone $a_tp"
"$ZT_BIN" plan configs/tiny.yaml --world 4 "${SMALL[@]}" "${TP[@]}" --set zero.stage=3 \
  --set parallel.tensor=2 "${SP[@]}" --set train.recompute=attn >"$WORK/plan_sp.txt" 2>&1 ||
  { cat "$WORK/plan_sp.txt"; fail "plan (sequence parallel) exited $?"; }
for want in "reduce_scatter 60" "all_gather 108" "all_reduce 37"; do
  set -- $want
  grep -qE "^  $1 +$2 " "$WORK/plan_sp.txt" || fail "plan: tensor $1 calls, expected $2: $(grep -A5 '^tensor parallelism' "$WORK/plan_sp.txt")"
done
run t2_sp_sample 2 1 2 "${SAMPLE[@]}" "${SP[@]}"
[ "$(sample_of w1_sample)" = "$(sample_of t2_sp_sample)" ] ||
  fail "sequence-parallel sample differs: '$(sample_of t2_sp_sample)'"
train_refused "expected parallel.tensor above 1 with parallel.sequence_parallel: true" 1 "${TP[@]}" "${SP[@]}"
train_refused "expected model.seq_len (63) to be a multiple of parallel.tensor" 2 "${TP[@]}" "${SP[@]}" \
  --set parallel.tensor=2 --set model.seq_len=63
train_refused "expected model.n_head (4) to be a multiple of parallel.tensor" 1 "${TP[@]}" --set parallel.tensor=3
train_refused "expected model.vocab_size (256) to be a multiple of parallel.tensor (equal vocabulary rows per rank; padded rows are allowed, 258 is the next multiple), got 3" \
  3 "${TP[@]}" --set parallel.tensor=3 --set model.n_head=3 --set model.n_embd=48
train_refused "key 'parallel.tensor': expected a size dividing the world size 3" 3 "${TP[@]}" --set parallel.tensor=2
train_refused "parallel.rank_order.*expected one of tensor-inner, data-inner, got 'diagonal'" 1 --set parallel.rank_order=diagonal
echo "PASS tensor_parallel"
