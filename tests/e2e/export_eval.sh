# Weights move out and back in: a checkpoint exported to llm.c's format and
# loaded with --init-from gives exactly the loss `eval --checkpoint` gives, and
# `sample` decodes text from the checkpoint.
. "$(dirname "$0")/../support/e2e_lib.sh"
"$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/run" "${SMALL[@]}" --set train.steps=4 \
  --set train.checkpoint_every=4 >/dev/null 2>&1 || fail "train"
ck="$WORK/run/checkpoints/step_00000004"
"$ZT_BIN" export --checkpoint "$ck" --format llmc "$WORK/model.bin" >/dev/null || fail "export"
a=$("$ZT_BIN" eval configs/tiny.yaml "${SMALL[@]}" --checkpoint "$ck" --batches 3 | grep -o 'mean loss [0-9.]*')
b=$("$ZT_BIN" eval configs/tiny.yaml "${SMALL[@]}" --init-from "$WORK/model.bin" --batches 3 | grep -o 'mean loss [0-9.]*')
[ -n "$a" ] && [ "$a" = "$b" ] || fail "eval differs: checkpoint '$a' vs exported '$b'"
txt=$("$ZT_BIN" sample --checkpoint "$ck" --prompt "And God said" --tokens 20) || fail "sample"
[ "${#txt}" -ge 20 ] || fail "sample too short: $txt"
echo "PASS export_eval ($a)"
