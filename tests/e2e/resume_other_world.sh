# Resume at another world size, checked by numbers (resume_after_kill.sh only
# checks that a W = 2 checkpoint loads at W = 3): a W = 2 stage-2 run of 6
# steps saves a checkpoint at step 3; that checkpoint resumed at W = 3 (stage
# 2) and at W = 4 (stage 3) trains steps 4..6, which must match the
# uninterrupted W = 2 run:
#  - lr of steps 4..6 exactly (the schedule depends on the step alone);
#  - step 4's loss to 1e-12 relative: the same weights and the same sequences,
#    each micro-batch's loss computed alike on any rank; only the grouping of
#    the double-precision sum over ranks differs;
#  - steps 4..6's grad_norm and steps 5..6's losses, and the final weights
#    (exported llm.c files), within fp32 tolerance: W ranks sum their
#    micro-batches' fp32 gradients in another grouping (12 micro-batches as
#    2 x 6, 3 x 4 or 4 x 3), which moves gradients by a few fp32 ulps, and
#    AdamW carries that into the weights. Measured on this config (W = 3 and 4):
#    losses within 1.1e-9 relative, grad_norm within 6e-8 relative, final
#    weights within 2e-8 relative L2 and 1e-7 per element; the bounds below
#    (losses 1e-7, grad_norm 5e-6, weights 1e-6 relative L2 and 1e-5 per
#    element) leave about 100x margin, while a re-shard that drops or misplaces
#    optimizer state (m, v or master) moves them by far more.
. "$(dirname "$0")/../support/e2e_lib.sh"
ARGS=("${SMALL[@]}" --set train.steps=6 --set train.checkpoint_every=3 --set train.keep_checkpoints=2
      --set zero.stage=2 --set zero.reduce_bucket_size=20000)

mpirun -np 2 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/full" "${ARGS[@]}" >"$WORK/full.txt" 2>&1 ||
  fail "W=2 run: $(tail -2 "$WORK/full.txt")"
[ -e "$WORK/full/checkpoints/step_00000003/COMPLETE" ] || fail "W=2 run saved no checkpoint at step 3"
"$ZT_BIN" export --checkpoint "$WORK/full/checkpoints/step_00000006" --format llmc "$WORK/full.bin" \
  >/dev/null || fail "export of the W=2 run"

for w in 3 4; do
  stage=$((w == 3 ? 2 : 3))
  mkdir -p "$WORK/w$w/checkpoints"
  cp -r "$WORK/full/checkpoints/step_00000003" "$WORK/w$w/checkpoints/"
  mpirun -np "$w" "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/w$w" --resume "${ARGS[@]}" \
    --set zero.stage=$stage >"$WORK/w$w.txt" 2>&1 || fail "W=$w resume: $(tail -2 "$WORK/w$w.txt")"
  grep -q "resumed from .*step 3, saved by 2 ranks at stage 2" "$WORK/w$w.txt" ||
    fail "W=$w did not resume from the W=2 checkpoint of step 3"
  "$ZT_BIN" export --checkpoint "$WORK/w$w/checkpoints/step_00000006" --format llmc "$WORK/w$w.bin" \
    >/dev/null || fail "export of the W=$w run"
  /usr/bin/python3 - "$WORK/full" "$WORK/w$w" "$WORK/full.bin" "$WORK/w$w.bin" "$w" <<'EOF' || fail "W=$w resumed run differs from the uninterrupted W=2 run"
import array, json, math, sys
full_dir, cut_dir, full_bin, cut_bin, w = sys.argv[1:]
def metrics(d):
    return {r["step"]: r for r in map(json.loads, open(d + "/metrics.jsonl"))}
a, b = metrics(full_dir), metrics(cut_dir)
bad = []
if sorted(b) != [4, 5, 6]:
    bad.append(f"resumed steps {sorted(b)}, expected [4, 5, 6]")
for s in [4, 5, 6]:
    if s not in b:
        continue
    x, y = a[s], b[s]
    if x["lr"] != y["lr"]:
        bad.append(f"step {s}: lr {y['lr']!r} vs {x['lr']!r}")
    tol = 1e-12 if s == 4 else 1e-7
    if abs(x["loss"] - y["loss"]) > tol * abs(x["loss"]):
        bad.append(f"step {s}: loss {y['loss']!r} vs {x['loss']!r} (tolerance {tol} relative)")
    if abs(x["grad_norm"] - y["grad_norm"]) > 5e-6 * abs(x["grad_norm"]):
        bad.append(f"step {s}: grad_norm {y['grad_norm']!r} vs {x['grad_norm']!r}")
def weights(path):
    raw = open(path, "rb").read()
    head, body = raw[:1024], array.array("f")
    body.frombytes(raw[1024:])
    return head, body
(ha, wa), (hb, wb) = weights(full_bin), weights(cut_bin)
if ha != hb or len(wa) != len(wb):
    bad.append("the exported files have different headers or sizes")
else:
    num = sum((p - q) ** 2 for p, q in zip(wa, wb))
    den = sum(p * p for p in wa)
    worst = max(abs(p - q) for p, q in zip(wa, wb))
    rel = math.sqrt(num / den)
    gn = max(abs(a[s]["grad_norm"] - b[s]["grad_norm"]) / a[s]["grad_norm"] for s in b)
    ls = max(abs(a[s]["loss"] - b[s]["loss"]) / a[s]["loss"] for s in b)
    print(f"W={w}: final weights rel L2 {rel:.3g}, max |diff| {worst:.3g}; "
          f"losses within {ls:.3g}, grad_norm within {gn:.3g} relative")
    if rel > 1e-6 or worst > 1e-5:
        bad.append(f"final weights: rel L2 {rel:.3g} (bound 1e-6), max |diff| {worst:.3g} (bound 1e-5)")
for line in bad:
    print("W=" + w + ": " + line)
sys.exit(1 if bad else 0)
EOF
done

# Fewer ranks than saved: one rank reads both rank files and must verify both;
# a flipped byte in the data (second half) of rank 1's file is refused by name.
mkdir -p "$WORK/w1/checkpoints"
cp -r "$WORK/full/checkpoints/step_00000003" "$WORK/w1/checkpoints/"
f=$WORK/w1/checkpoints/step_00000003/rank_00001.bin
/usr/bin/python3 -c 'import sys; p, o = sys.argv[1], int(sys.argv[2]); b = bytearray(open(p, "rb").read()); b[o] ^= 0xFF; open(p, "wb").write(b)' \
  "$f" $(($(stat -c %s "$f") * 3 / 4))
if "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/w1" --resume "${ARGS[@]}" >"$WORK/w1.txt" 2>&1; then
  fail "W=1 resumed from a checkpoint whose rank 1 file is corrupt"
fi
grep -q "rank_00001.bin: .*checksum mismatch" "$WORK/w1.txt" ||
  fail "W=1 did not name the corrupt rank 1 file: $(tail -2 "$WORK/w1.txt")"
echo "PASS resume_other_world"
