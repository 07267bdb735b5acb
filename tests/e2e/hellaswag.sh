# HellaSwag end to end on a hand-made file: each context is the start of a
# KJV verse, the right ending its next words, the three wrong ones gibberish
# of the same length. A byte-level model trained for a few seconds gets every
# example right by both criteria (the untrained one cannot); the scores during
# training agree at W = 1, at W = 2 under ZeRO stage 3, with 2 tensor-
# parallel ranks and with 2 pipeline stages; a malformed line
# stops the run before it starts, naming the line.
. "$(dirname "$0")/../support/e2e_lib.sh"
/usr/bin/python3 - "$ZT_DATA_DIR/kjv.txt" "$WORK/hs.jsonl" <<'PY'
import json, random, sys
verses = open(sys.argv[1], encoding="utf-8").read().split("\n")
rng = random.Random(7)
with open(sys.argv[2], "w") as out:
    for i, verse in enumerate(v for v in verses[::2400] if len(v.split()) >= 12):
        words = verse.split()
        ending = " ".join(words[6:11])
        wrong = ["".join(c if c == " " else rng.choice("qxzjvkwfy") for c in ending) for _ in range(3)]
        label = i % 4
        endings = wrong[:label] + [ending] + wrong[label:]
        out.write(json.dumps({"ind": i, "ctx": " ".join(words[:6]), "endings": endings, "label": label}) + "\n")
PY
n=$(wc -l <"$WORK/hs.jsonl")
[ "$n" -ge 10 ] || fail "only $n examples"

"$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/run" "${SMALL[@]}" --set train.steps=40 \
  --set train.checkpoint_every=40 >"$WORK/train.log" 2>&1 || fail "train: $(tail -2 "$WORK/train.log")"
trained=$("$ZT_BIN" eval configs/tiny.yaml "${SMALL[@]}" --checkpoint "$WORK/run/checkpoints/step_00000040" \
  --hellaswag "$WORK/hs.jsonl") || fail "eval --hellaswag"
untrained=$("$ZT_BIN" eval configs/tiny.yaml "${SMALL[@]}" --hellaswag "$WORK/hs.jsonl") || fail "eval untrained"
echo "trained:   $trained"
echo "untrained: $untrained"
printf '%s' "$trained" | grep -qF "acc 1.0000 ($n/$n, lowest summed loss) | acc_norm 1.0000 ($n/$n," ||
  fail "the trained model missed examples: $trained"
printf '%s' "$untrained" | grep -qF "acc_norm 1.0000" && fail "the untrained model got everything right: $untrained"
limited=$("$ZT_BIN" eval configs/tiny.yaml "${SMALL[@]}" --hellaswag "$WORK/hs.jsonl" --limit 3) || fail "--limit"
printf '%s' "$limited" | grep -qF "/3, lowest summed loss" || fail "--limit 3: $limited"

# During training: W = 1, then W = 2 at stage 3, the same counts at every evaluation.
HS=(--set train.steps=4 --set train.hellaswag_every=2 --set "train.hellaswag_file=$WORK/hs.jsonl")
"$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/w1" "${SMALL[@]}" "${HS[@]}" >"$WORK/w1.log" 2>&1 ||
  fail "train W=1: $(tail -2 "$WORK/w1.log")"
mpirun -np 2 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/w2" "${SMALL[@]}" "${HS[@]}" \
  --set zero.stage=3 >"$WORK/w2.log" 2>&1 || fail "train W=2 stage 3: $(tail -2 "$WORK/w2.log")"
grep -q "^step     2 | hellaswag: acc" "$WORK/w1.log" || fail "no hellaswag line: $(tail -3 "$WORK/w1.log")"
# metrics.jsonl: the counts in the records of steps 2 and 4 only.
[ "$(grep -c '"hellaswag":' "$WORK/w1/metrics.jsonl")" -eq 2 ] &&
  grep '"hellaswag":' "$WORK/w1/metrics.jsonl" | grep -q '^{"step":2,' ||
  fail "metrics.jsonl: $(cat "$WORK/w1/metrics.jsonl")"
counts() {
  grep '"hellaswag":' "$1" |
    grep -o '"step":[0-9]*\|"correct":[0-9]*\|"correct_norm":[0-9]*\|"examples":[0-9]*' | paste -sd' '
}
[ "$(counts "$WORK/w1/metrics.jsonl")" = "$(counts "$WORK/w2/metrics.jsonl")" ] ||
  fail "W=1 and W=2 stage 3 differ: $(counts "$WORK/w1/metrics.jsonl") vs $(counts "$WORK/w2/metrics.jsonl")"
# Two tensor-parallel ranks score every example together (the loss over a
# split vocabulary): the same counts again.
mpirun -np 2 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/t2" "${SMALL[@]}" "${HS[@]}" \
  --set parallel.tensor=2 >"$WORK/t2.log" 2>&1 || fail "train T=2: $(tail -2 "$WORK/t2.log")"
[ "$(counts "$WORK/w1/metrics.jsonl")" = "$(counts "$WORK/t2/metrics.jsonl")" ] ||
  fail "W=1 and T=2 differ: $(counts "$WORK/w1/metrics.jsonl") vs $(counts "$WORK/t2/metrics.jsonl")"
# Two pipeline stages score through the stages (the last one's token losses
# broadcast to the first): the same counts again.
mpirun -np 2 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/p2" "${SMALL[@]}" "${HS[@]}" \
  --set parallel.pipeline=2 --set train.sample_every=0 >"$WORK/p2.log" 2>&1 || fail "train P=2: $(tail -2 "$WORK/p2.log")"
[ "$(counts "$WORK/w1/metrics.jsonl")" = "$(counts "$WORK/p2/metrics.jsonl")" ] ||
  fail "W=1 and P=2 differ: $(counts "$WORK/w1/metrics.jsonl") vs $(counts "$WORK/p2/metrics.jsonl")"

# A malformed line: one line naming the file and the line, exit 2, no run directory.
{ head -2 "$WORK/hs.jsonl"; echo '{"ctx": "x", "endings": ["a", "b"], "label": 0}'; } >"$WORK/bad.jsonl"
out=$("$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/bad" "${SMALL[@]}" --set train.hellaswag_every=1 \
  --set "train.hellaswag_file=$WORK/bad.jsonl" 2>&1); rc=$?
[ "$rc" -eq 2 ] || fail "malformed file: exit $rc: $out"
[ "$out" = "zerotrain: $WORK/bad.jsonl:3: key 'endings': expected an array of 4 strings, got an array of 2" ] ||
  fail "malformed file message: $out"
[ ! -e "$WORK/bad" ] || fail "a run directory was made for a bad HellaSwag file"
out=$("$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/bad" "${SMALL[@]}" --set train.hellaswag_every=1 2>&1)
[ $? -eq 2 ] && printf '%s' "$out" | grep -qF "expected train.hellaswag_file" || fail "hellaswag_every without a file: $out"
echo "during training: $(counts "$WORK/w2/metrics.jsonl")"
echo "PASS hellaswag ($n examples)"
