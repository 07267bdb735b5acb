# MiCS (zero.mics_shard_size 2 at W = 4: shard groups {0,1} {2,3}, replicas {0,2} {1,3}) through
# checkpoints and export:
#  - each optimizer-state piece is written once: ranks 0 and 1 (the first replica) write every
#    parameter's pieces between them, ranks 2 and 3 write rank files with no pieces;
#  - the MiCS run trains like plain stage 3 at W = 4 within fp32 tolerance (its gradients are
#    summed in another grouping: over 2 ranks, then across 2 replicas, instead of over 4):
#    losses within 1e-6 relative, grad_norm within 5e-6, exported weights within 1e-6 relative L2;
#  - resumed from its own step-3 checkpoint at the same layout it continues bit for bit (the
#    same losses and the same exported bytes);
#  - across layouts: its checkpoint resumed as plain stage 3 at W = 2, and a plain W = 2
#    stage-2 checkpoint resumed as MiCS at W = 4, both end within the tolerances above of the
#    uninterrupted runs.
. "$(dirname "$0")/../support/e2e_lib.sh"
ARGS=("${SMALL[@]}" --set train.steps=6 --set train.checkpoint_every=3 --set train.keep_checkpoints=2
      --set zero.stage=3 --set zero.reduce_bucket_size=20000)
MICS=(--set zero.mics_shard_size=2)

run() {  # name ranks args...
  local name=$1 np=$2
  shift 2
  mpirun -np "$np" "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/$name" "$@" \
    >"$WORK/$name.txt" 2>&1 || fail "$name: $(tail -2 "$WORK/$name.txt")"
  "$ZT_BIN" export --checkpoint "$WORK/$name/checkpoints/step_00000006" --format llmc \
    "$WORK/$name.bin" >/dev/null || fail "export of $name"
}
resume() {  # name ranks checkpoint-of args...
  local name=$1 np=$2 from=$3
  shift 3
  mkdir -p "$WORK/$name/checkpoints"
  cp -r "$WORK/$from/checkpoints/step_00000003" "$WORK/$name/checkpoints/"
  run "$name" "$np" --resume "$@"
}
compare() {  # reference run, run, exact|close
  /usr/bin/python3 - "$WORK/$1" "$WORK/$2" "$3" <<'EOF' || fail "$2 differs from $1 (above)"
import array, json, math, sys
ref, run, mode = sys.argv[1:]
def metrics(d):
    return {r["step"]: r for r in map(json.loads, open(d + "/metrics.jsonl"))}
def weights(path):
    raw = open(path, "rb").read()
    body = array.array("f")
    body.frombytes(raw[1024:])
    return raw[:1024], body
a, b = metrics(ref), metrics(run)
(ha, wa), (hb, wb) = weights(ref + ".bin"), weights(run + ".bin")
bad = []
if ha != hb or len(wa) != len(wb):
    bad.append("the exported files have different headers or sizes")
for s in b:
    x, y = a[s], b[s]
    if mode == "exact":
        if (x["loss"], x["grad_norm"]) != (y["loss"], y["grad_norm"]):
            bad.append(f"step {s}: loss {y['loss']!r}, norm {y['grad_norm']!r} vs "
                       f"{x['loss']!r}, {x['grad_norm']!r}")
    else:
        if abs(x["loss"] - y["loss"]) > 1e-6 * abs(x["loss"]):
            bad.append(f"step {s}: loss {y['loss']!r} vs {x['loss']!r} (1e-6 relative)")
        if abs(x["grad_norm"] - y["grad_norm"]) > 5e-6 * abs(x["grad_norm"]):
            bad.append(f"step {s}: grad_norm {y['grad_norm']!r} vs {x['grad_norm']!r}")
if not bad:
    if mode == "exact":
        if wa != wb:
            bad.append("exported weights differ")
    else:
        rel = math.sqrt(sum((p - q) ** 2 for p, q in zip(wa, wb)) / sum(p * p for p in wa))
        print(f"{run.split('/')[-1]} vs {ref.split('/')[-1]}: final weights rel L2 {rel:.3g}")
        if rel > 1e-6:
            bad.append(f"final weights: rel L2 {rel:.3g} (bound 1e-6)")
for line in bad:
    print(run.split("/")[-1] + ": " + line)
sys.exit(1 if bad else 0)
EOF
}

run plain 4 "${ARGS[@]}"
run mics 4 "${ARGS[@]}" "${MICS[@]}"
grep -q "MiCS: sharded over groups of 2 consecutive ranks, replicated over 2 groups" "$WORK/mics.txt" ||
  fail "the MiCS run did not say how it shards"

# Each piece once: ranks 0 and 1 cover every parameter, ranks 2 and 3 write none.
/usr/bin/python3 - "$WORK/mics/checkpoints/step_00000006/meta.json" <<'EOF' || fail "the MiCS checkpoint does not hold each piece once"
import json, sys
m = json.load(open(sys.argv[1]))
elements = [r["elements"] for r in m["ranks"]]
print(f"MiCS checkpoint: elements per rank file {elements}, {m['params']} parameters")
sys.exit(0 if elements[2] == elements[3] == 0 and elements[0] + elements[1] == m["params"] else 1)
EOF

compare plain mics close
resume mics_again 4 mics "${ARGS[@]}" "${MICS[@]}"
compare mics mics_again exact
resume mics_as_plain_w2 2 mics "${ARGS[@]}"
compare mics mics_as_plain_w2 close

run stage2_w2 2 "${ARGS[@]}" --set zero.stage=2
resume stage2_as_mics 4 stage2_w2 "${ARGS[@]}" "${MICS[@]}"
grep -q "resumed from .*step 3, saved by 2 ranks at stage 2" "$WORK/stage2_as_mics.txt" ||
  fail "the MiCS run did not resume from the W=2 stage-2 checkpoint"
compare stage2_w2 stage2_as_mics close
echo "PASS mics_checkpoint"
