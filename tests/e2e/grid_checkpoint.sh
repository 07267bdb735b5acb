# Checkpoints of a 3-D grid, saved at one grid and resumed at another: a run
# of 1 data x 2 tensor x 2 pipeline ranks (ZeRO-1) saves at steps 2 and 4;
# its step-2 checkpoint is resumed
#  - at the same grid: steps 3 and 4 repeat the uninterrupted run's losses,
#    norms and final weights bit for bit (the state went out and came back
#    whole);
#  - at 3 data-parallel ranks with ZeRO-3 (tensor, pipeline, data and stage
#    all changed): lr exactly, losses and norms within fp32 rounding (the
#    tensor shards' partial sums and the data ranks' gradients are added in
#    another order), final weights within 1e-5 relative L2;
#  - at 3 data-parallel ranks with a learning rate of 1e-30, which leaves
#    every weight as it was: its step-3 checkpoint exports to the same bytes
#    as the grid's step-2 checkpoint, so the reshard moved every master
#    weight to its place, none lost or doubled.
# `export` of the grid's checkpoints gathers the shards into llm.c's file.
. "$(dirname "$0")/../support/e2e_lib.sh"
ARGS=("${SMALL[@]}" --set train.steps=4 --set train.checkpoint_every=2 --set train.keep_checkpoints=2
      --set train.grad_clip=1.0)
GRID=(--set parallel.tensor=2 --set parallel.pipeline=2 --set zero.stage=1)
OTHER=(--set zero.stage=3)

train() {  # NAME RANKS ARGS...
  local name=$1 ranks=$2
  shift 2
  mpirun -np "$ranks" "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/$name" "${ARGS[@]}" "$@" \
    >"$WORK/$name.txt" 2>&1 || fail "$name: $(tail -2 "$WORK/$name.txt")"
}
resume_from_step2() {  # NAME RANKS ARGS...
  mkdir -p "$WORK/$1/checkpoints"
  cp -r "$WORK/grid/checkpoints/step_00000002" "$WORK/$1/checkpoints/"
  train "$@" --resume
  grep -q "resumed from .*step 2, saved by 4 ranks at stage 1" "$WORK/$1.txt" ||
    fail "$1 did not resume from the grid's step-2 checkpoint"
}
export_llmc() {  # CHECKPOINT OUT
  "$ZT_BIN" export --checkpoint "$1" --format llmc "$2" >/dev/null || fail "export of $1"
}

train grid 4 "${GRID[@]}"
export_llmc "$WORK/grid/checkpoints/step_00000002" "$WORK/grid2.bin"
export_llmc "$WORK/grid/checkpoints/step_00000004" "$WORK/grid4.bin"

resume_from_step2 same 4 "${GRID[@]}"
export_llmc "$WORK/same/checkpoints/step_00000004" "$WORK/same4.bin"
cmp -s "$WORK/grid4.bin" "$WORK/same4.bin" || fail "same grid: the final weights differ"

resume_from_step2 other 3 "${OTHER[@]}"
export_llmc "$WORK/other/checkpoints/step_00000004" "$WORK/other4.bin"

resume_from_step2 frozen 3 "${OTHER[@]}" --set train.steps=3 --set train.checkpoint_every=1 \
  --set train.lr=1e-30 --set train.min_lr=0 --set train.lr_schedule=constant
export_llmc "$WORK/frozen/checkpoints/step_00000003" "$WORK/frozen3.bin"
cmp -s "$WORK/grid2.bin" "$WORK/frozen3.bin" ||
  fail "the grid's step-2 weights resharded to 3 data-parallel ranks are not the same bytes"

/usr/bin/python3 - "$WORK" <<'EOF' || fail "the resumed runs differ from the uninterrupted grid run"
import array, json, math, sys
work = sys.argv[1]
def metrics(name):
    return {r["step"]: r for r in map(json.loads, open(f"{work}/{name}/metrics.jsonl")) if "loss" in r}
def weights(name):
    body = array.array("f")
    body.frombytes(open(f"{work}/{name}.bin", "rb").read()[1024:])
    return body
full, bad = metrics("grid"), []
for name, exact in (("same", True), ("other", False)):
    got = metrics(name)
    if sorted(got) != [3, 4]:
        bad.append(f"{name}: resumed steps {sorted(got)}, expected [3, 4]")
        continue
    for s in (3, 4):
        x, y = full[s], got[s]
        for key, tol in (("lr", 0), ("loss", 2e-5), ("grad_norm", 1e-4)):
            tol = 0 if exact else tol
            if abs(x[key] - y[key]) > tol * abs(x[key]):
                bad.append(f"{name} step {s}: {key} {y[key]!r} vs {x[key]!r} (tolerance {tol} relative)")
    print(f"{name}: losses {[got[s]['loss'] for s in (3, 4)]} vs {[full[s]['loss'] for s in (3, 4)]}")
a, b = weights("grid4"), weights("other4")
rel = math.sqrt(sum((p - q) ** 2 for p, q in zip(a, b)) / sum(p * p for p in a))
print(f"other: final weights rel L2 {rel:.3g}")
if len(a) != len(b) or rel > 1e-5:
    bad.append(f"other: final weights rel L2 {rel:.3g} (bound 1e-5)")
for line in bad:
    print(line)
sys.exit(1 if bad else 0)
EOF

echo "PASS grid_checkpoint"
