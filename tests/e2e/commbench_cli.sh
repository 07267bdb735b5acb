#!/usr/bin/env bash
# End to end: `zerotrain commbench` at W = 2 (plain mpirun, sizes up to 4 KiB,
# fp32 and bf16): the table, the JSON curves with every check "ok" and the
# cluster description from ZT_CLUSTER embedded; one-line errors with exit 2
# for an unreadable ZT_CLUSTER and an --out that cannot be written (before
# anything is measured); --host-nvme's host block (copies, host AdamW, files),
# read back by plan's step-time model for an offloaded optimizer; at W = 4
# --group-size 2 (two tensor groups measuring at once), its curves refused as
# a whole-world --network and taken by report --tensor-curves for the tensor
# calls of a T = 2 run; --group-size 2 --group-stride 2 (the data-parallel
# groups of 2 data x 2 tensor ranks) taken by report and plan --data-curves.
# About 25 s.
here=$(cd "$(dirname "$0")/../.." && pwd)
source "$here/tests/support/e2e_lib.sh"
write_one_node_cluster "$WORK/cluster.json"
ZT_CLUSTER="$WORK/cluster.json" mpirun -np 2 "$ZT_BIN" commbench --max-bytes 4K --iters 2 --warmup 1 \
  --dtype all --out "$WORK/cb.json" >"$WORK/cb.log" 2>&1 || fail "commbench exited $?: $(tail -3 "$WORK/cb.log")"
grep -q '^# all_reduce bf16 (bus factor 2(W-1)/W = 1)' "$WORK/cb.log" || fail "no all_reduce bf16 table: $(head -20 "$WORK/cb.log")"
grep -q 'link%' "$WORK/cb.log" || fail "no link% column with ZT_CLUSTER set"
/usr/bin/python3 - "$WORK/cb.json" <<'PY' || fail "the JSON is not what it should be"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["communicator"] == "mpi" and d["world"] == 2 and d["nodes"] == 1 and d["ranks_per_node"] == 2, d
assert d["cluster"]["link"]["rate_bits_per_s"] == 1e8, d["cluster"]
curves = {(c["primitive"], c["dtype"]): c for c in d["curves"]}
prims = ["all_reduce", "reduce_scatter", "all_gather", "reduce", "broadcast", "all_to_all"]
assert sorted(curves) == sorted((p, t) for p in prims for t in ("fp32", "bf16")), sorted(curves)
for (p, t), c in curves.items():
    assert c["points"][-1]["bytes"] == 4096, (p, t, c["points"][-1])
    for pt in c["points"]:
        assert pt["check"] == "ok" and pt["wrong"] == 0, (p, t, pt)
        assert pt["count"] * (4 if t == "fp32" else 2) == pt["bytes"], (p, t, pt)
        assert abs(pt["busbw_GBps"] - pt["algbw_GBps"] * c["bus_factor"]) <= 1e-12 * max(1, pt["busbw_GBps"]), pt
PY

mkdir -p "$WORK/nvme"
mpirun -np 2 "$ZT_BIN" commbench --primitives all_reduce,all_gather,reduce_scatter --max-bytes 4K \
  --iters 2 --warmup 1 --host-nvme "$WORK/nvme" --out "$WORK/host.json" >"$WORK/host.log" 2>&1 ||
  fail "commbench --host-nvme exited $?: $(grep -v '^  ' "$WORK/host.log" | tail -5)"
grep -q '^# host (per rank, slowest of 2 measured at once): copies to host' "$WORK/host.log" ||
  fail "no host line: $(grep '^# host' "$WORK/host.log")"
[ -z "$(ls -A "$WORK/nvme")" ] || fail "commbench --host-nvme left files: $(ls "$WORK/nvme")"
/usr/bin/python3 - "$WORK/host.json" <<'PY' || fail "the host block is not what it should be"
import json, sys
h = json.load(open(sys.argv[1]))["host"]
for k in ("pcie_GBps", "to_host_GBps", "from_host_GBps", "adamw_Gelements_per_s", "nvme_GBps"):
    assert h[k] > 0, (k, h)
assert h["pcie_GBps"] == min(h["to_host_GBps"], h["from_host_GBps"]) and h["adamw_threads"] >= 1, h
assert "measured by zerotrain commbench --host on 2 ranks" in h["source"], h
PY
plan=$("$ZT_BIN" plan configs/tiny.yaml --world 2 --set zero.stage=2 \
  --set zero.offload_optimizer.device=cpu --network "$WORK/host.json" --compute-ms 10,2 2>&1) ||
  fail "plan with the host block: $plan"
/usr/bin/python3 - "$WORK/host.json" "$plan" <<'PY' || fail "plan's offloaded optimizer time is not the host block's"
import json, re, sys
h = json.load(open(sys.argv[1]))["host"]
# tiny.yaml at W = 2, stage 2: the shard and its chunks from plan's offload line.
shard, chunks = map(int, re.search(r"optimizer: (\d+) elements per rank streamed in (\d+) chunk",
                                   sys.argv[2]).groups())
model = sys.argv[2][sys.argv[2].index("step-time model"):]
row = re.search(r"^\* stage 2 \S+\s+[\d.]+\s+([\d.]+)", model, re.M)
# fp32: gradients 4 B/element over pcie, then per chunk max(AdamW, upload) after the first
adamw, up = shard / (h["adamw_Gelements_per_s"] * 1e9), 4 * shard / (h["pcie_GBps"] * 1e9)
a, u = adamw / chunks, up / chunks
lo = a + u + (chunks - 1) * max(a, u)  # the gradient copies hide behind the backward
hi = lo + up                           # or none of them do
got = float(row.group(1)) / 1e3
assert lo - 1e-5 <= got <= hi + 1e-5, (lo, got, hi)  # plan prints 0.01 ms
PY

mpirun -np 4 "$ZT_BIN" commbench --primitives all_reduce,reduce_scatter,all_gather --group-size 2 \
  --max-bytes 4K --iters 2 --warmup 1 --out "$WORK/g2.json" >"$WORK/g2.log" 2>&1 ||
  fail "commbench --group-size 2 exited $?: $(tail -3 "$WORK/g2.log")"
grep -q '^# groups: 2 blocks of 2 consecutive ranks' "$WORK/g2.log" || fail "no groups line: $(head -5 "$WORK/g2.log")"
/usr/bin/python3 - "$WORK/g2.json" <<'PY' || fail "the grouped JSON is not what it should be"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["world"] == 4 and d["group_size"] == 2, d
factor = {"all_reduce": 1.0, "reduce_scatter": 0.5, "all_gather": 0.5}  # 2(N-1)/N, (N-1)/N at N = 2
for c in d["curves"]:
    assert c["bus_factor"] == factor[c["primitive"]], c
    assert all(pt["check"] == "ok" for pt in c["points"]), c
PY
expect_error "--group-size above W" "--group-size" "$ZT_BIN" commbench --group-size 2 --max-bytes 64
expect_error "grouped curves as a whole-world --network" "measured over groups of 2 ranks" \
  "$ZT_BIN" plan configs/tiny.yaml --world 4 --network "$WORK/g2.json" --compute-ms 10,2

# report --tensor-curves: a T = 2 run at W = 2, compute emulated, on a preset.
mpirun -np 2 "$ZT_BIN" commbench --primitives all_reduce,all_gather --group-size 2 --max-bytes 1M \
  --iters 2 --warmup 1 --out "$WORK/t2.json" >"$WORK/t2.log" 2>&1 || fail "commbench at W = 2 exited $?"
# A decoy of the same world over groups of 1: report must pick the file of T = 2.
mpirun -np 2 "$ZT_BIN" commbench --primitives all_reduce,all_gather --group-size 1 --max-bytes 1M \
  --iters 2 --warmup 1 --out "$WORK/t1.json" >"$WORK/t1.log" 2>&1 || fail "commbench --group-size 1 exited $?"
mkdir -p "$WORK/runs"
mpirun -np 2 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/runs/t2" "${SMALL[@]}" \
  --set parallel.tensor=2 --set train.steps=2 --set system.compute=emulate \
  --set system.emulate_micro_step_ms=5 --set system.emulate_optimizer_ms=1 >"$WORK/t2-train.log" 2>&1 || fail "the T = 2 run exited $?: $(tail -3 "$WORK/t2-train.log")"
preset=configs/networks/h100_ib400_8gpu.json
"$ZT_BIN" report "$WORK/runs" --no-plots --network "$preset" --out "$WORK/link" >/dev/null 2>&1 || fail "report (link rule) failed"
"$ZT_BIN" report "$WORK/runs" --no-plots --network "$preset" --tensor-curves "$WORK/t1.json" \
  --tensor-curves "$WORK/t2.json" \
  --out "$WORK/curves" >/dev/null 2>&1 || fail "report --tensor-curves failed"
/usr/bin/python3 - "$WORK/link/report.csv" "$WORK/curves/report.csv" <<'PY' || fail "report did not take the tensor curves"
import csv, sys
link, measured = (next(csv.DictReader(open(p))) for p in sys.argv[1:])
assert "tensor calls by the link rule" in link["prediction_compute_source"], link
assert "tensor calls measured by commbench" in measured["prediction_compute_source"], measured
assert "t2.json (W = 2)" in measured["prediction_compute_source"], measured
# Shared memory's measured calls take longer than the preset's NVLink figures.
assert float(measured["predicted_step_ms"]) > float(link["predicted_step_ms"]), (link, measured)
PY
mpirun -np 2 "$ZT_BIN" commbench --primitives all_gather --group-size 2 --max-bytes 1K --iters 2 \
  --warmup 1 --out "$WORK/gather-only.json" >/dev/null 2>&1 || fail "commbench of all_gather alone exited $?"
expect_error "tensor curves without an all-reduce" "--tensor-curves measured by commbench: $WORK/gather-only.json (W = 2): tensor curves: no all_reduce fp32 curve" \
  "$ZT_BIN" report "$WORK/runs" --no-plots --network "$preset" --tensor-curves "$WORK/gather-only.json" --out "$WORK/bad"
plan=$("$ZT_BIN" plan configs/tiny.yaml --world 2 --set parallel.tensor=2 --network "$preset" \
  --compute-ms 5,1 --tensor-curves "$WORK/t2.json" 2>&1) || fail "plan --tensor-curves: $plan"
printf '%s\n' "$plan" | grep -qF "tensor calls: measured by commbench: $WORK/t2.json (W = 2)" ||
  fail "plan does not name its tensor curves: $plan"
expect_error "plan --tensor-curves of another layout" "expected commbench --group-size 2 at W = 2 with 2 ranks per node, got group size 2 at W = 4" \
  "$ZT_BIN" plan configs/tiny.yaml --world 2 --set parallel.tensor=2 --network "$preset" \
  --compute-ms 5,1 --tensor-curves "$WORK/g2.json"
expect_error "plan --tensor-curves without a tensor group" "needs --network and parallel.tensor > 1" \
  "$ZT_BIN" plan configs/tiny.yaml --world 2 --network "$preset" --compute-ms 5,1 --tensor-curves "$WORK/t2.json"
expect_error "a preset as --tensor-curves" "not commbench's JSON" \
  "$ZT_BIN" report "$WORK/runs" --no-plots --tensor-curves "$preset" --out "$WORK/bad"

# --group-stride: the data-parallel groups of 2 data x 2 tensor ranks ({0, 2} and
# {1, 3}), and report --data-curves / plan --data-curves taking them.
mpirun -np 4 "$ZT_BIN" commbench --primitives all_reduce,all_gather --group-size 2 --group-stride 2 \
  --max-bytes 1M --iters 2 --warmup 1 --out "$WORK/d2s2.json" >"$WORK/d2s2.log" 2>&1 ||
  fail "commbench --group-stride 2 exited $?: $(tail -3 "$WORK/d2s2.log")"
grep -q '^# groups: 2 groups of 2 ranks 2 apart' "$WORK/d2s2.log" || fail "no strided groups line: $(head -5 "$WORK/d2s2.log")"
/usr/bin/python3 - "$WORK/d2s2.json" <<'PY' || fail "the strided JSON is not what it should be"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["world"] == 4 and d["group_size"] == 2 and d["group_stride"] == 2, d
assert all(pt["check"] == "ok" for c in d["curves"] for pt in c["points"]), d
PY
expect_error "a stride above W" "--group-stride" "$ZT_BIN" commbench --group-stride 2 --max-bytes 64
mkdir -p "$WORK/grid"
mpirun -np 4 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/grid/d2t2" "${SMALL[@]}" \
  --set parallel.tensor=2 --set train.steps=2 --set zero.stage=1 --set system.compute=emulate \
  --set system.emulate_micro_step_ms=5 --set system.emulate_optimizer_ms=1 >"$WORK/d2t2-train.log" 2>&1 || fail "the 2 x 2 run exited $?: $(tail -3 "$WORK/d2t2-train.log")"
# g2.json (groups of 2 consecutive ranks) is the decoy: report must pick the strided file.
"$ZT_BIN" report "$WORK/grid" --no-plots --network "$preset" --data-curves "$WORK/g2.json" \
  --data-curves "$WORK/d2s2.json" --out "$WORK/data" >/dev/null 2>&1 || fail "report --data-curves failed"
"$ZT_BIN" report "$WORK/grid" --no-plots --network "$preset" --out "$WORK/data-link" >/dev/null 2>&1 || fail "report (data by the link rule) failed"
/usr/bin/python3 - "$WORK/data-link/report.csv" "$WORK/data/report.csv" <<'PY' || fail "report did not take the data curves"
import csv, sys
link, measured = (next(csv.DictReader(open(p))) for p in sys.argv[1:])
assert "data-parallel calls by the link rule" in link["prediction_compute_source"], link
assert "data-parallel calls measured by commbench" in measured["prediction_compute_source"], measured
assert "d2s2.json (W = 4, groups of 2 ranks 2 apart)" in measured["prediction_compute_source"], measured
# Shared memory on two cores is slower than the preset's NVLink.
assert float(measured["predicted_step_ms"]) > float(link["predicted_step_ms"]), (link, measured)
PY
plan=$("$ZT_BIN" plan configs/tiny.yaml --world 4 --set parallel.tensor=2 --network "$preset" \
  --compute-ms 5,1 --data-curves "$WORK/d2s2.json" 2>&1) || fail "plan --data-curves: $plan"
printf '%s\n' "$plan" | grep -qF "data-parallel calls: measured by commbench: $WORK/d2s2.json (W = 4, groups of 2 ranks 2 apart)" ||
  fail "plan does not name its data curves: $plan"
expect_error "plan --data-curves of consecutive groups" "--data-curves $WORK/g2.json: expected commbench --group-size 2 --group-stride 2 at W = 4 with 4 ranks per node, got group size 2 at W = 4" \
  "$ZT_BIN" plan configs/tiny.yaml --world 4 --set parallel.tensor=2 --network "$preset" \
  --compute-ms 5,1 --data-curves "$WORK/g2.json"
expect_error "plan --data-curves without a grid" "needs --network, parallel.tensor or parallel.pipeline > 1" \
  "$ZT_BIN" plan configs/tiny.yaml --world 4 --network "$preset" --compute-ms 5,1 --data-curves "$WORK/d2s2.json"

echo 'not json' >"$WORK/bad.json"
out=$(ZT_CLUSTER="$WORK/bad.json" "$ZT_BIN" commbench --max-bytes 64 2>&1)
rc=$?
[ "$rc" = 2 ] || fail "a bad ZT_CLUSTER exited $rc, expected 2: $out"
[ "$(echo "$out" | wc -l)" = 1 ] && [[ "$out" == *"ZT_CLUSTER=$WORK/bad.json:1:1: JSON syntax error"* ]] ||
  fail "a bad ZT_CLUSTER said: $out"
out=$(mpirun -np 2 "$ZT_BIN" commbench --max-bytes 64 --out "$WORK/no/such/dir/cb.json" 2>&1)
rc=$?
[ "$rc" != 0 ] || fail "an unwritable --out exited 0"
[[ "$out" == *"--out $WORK/no/such/dir/cb.json: its directory $WORK/no/such/dir does not exist"* ]] || fail "an unwritable --out said: $out"
[[ "$out" != *"all_reduce fp32"* ]] || fail "commbench measured before finding that --out cannot be written"
echo "PASS commbench_cli"
