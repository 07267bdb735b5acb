# A short run of the default config: the loss falls, the outputs have their
# fields, a sample is printed and summary.json is complete.
. "$(dirname "$0")/../support/e2e_lib.sh"
"$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/run" "${SMALL[@]}" --set train.steps=20 \
  --set train.eval_every=10 --set train.eval_batches=2 --set train.sample_every=20 \
  --set train.sample_tokens=40 --set train.warmup_steps=2 >"$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt"; fail "train exited $?"; }
first=$(losses "$WORK/run/metrics.jsonl" | head -1)
last=$(losses "$WORK/run/metrics.jsonl" | tail -1)
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < 0.8 * a) }' || fail "loss did not fall: $first -> $last"
[ "$(wc -l <"$WORK/run/metrics.jsonl")" -eq 20 ] || fail "metrics.jsonl should have 20 lines"
grep -q '"val_loss"' "$WORK/run/metrics.jsonl" || fail "no val_loss in metrics.jsonl"
grep -q -- '---- sample at step 20' "$WORK/out.txt" || fail "no sample printed"
for k in world_size steps final_train_loss final_val_loss tokens_per_second step_ms_median params \
         config comm memory model_states_formula grad_path; do
  grep -q "\"$k\"" "$WORK/run/summary.json" || fail "summary.json lacks $k"
done
[ -f "$WORK/run/config.yaml" ] || fail "effective config not saved"
echo "PASS train_tiny: loss $first -> $last"
