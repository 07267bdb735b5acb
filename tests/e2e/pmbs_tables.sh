# The generators of docs/PMBS.md's tables, on report.csv files written here
# with hand-computed answers. scripts/pmbs_stability.py (stability and model): configuration A is its
# own baseline (steps 100/110/90 ms, median 100, predicted 105: 5% off);
# B's steps 200/210/220 (median 210, predicted 252: 20% off), its tokens/s
# speed-ups 1.0/1.05/0.8 (median 1.0: 20% deviation) and median-step
# speed-ups 1.0/1.02/0.98 (2%); then a CSV without a needed column.
# scripts/pmbs_findings.py (the three findings): every configuration of the
# grid at 600 tok/s but s0 (1000 at mb 4, 1200 at mb 12), s1-ds_default 900,
# s1-per_owner 980, s2-ds_default 700, s2-native_rs 800 and s3-rs 500 (all mb 4),
# every speed-up 1.1 [1.0, 1.2]. scripts/pmbs_repredict.py (this build's
# model against a stored study): stage 0 of configs/pmbs/cpu_base.yaml on
# 2 x 1 ranks, 3 micro-steps of a stated 10 ms and a 2 ms optimizer, on a
# commbench file where every call takes 10 ms: 3 x 10 + 2, the gradients'
# all-reduce and the gradient norm's, 52 ms, against a measured median of 50
# (+4.0%) and a reported 60 (+20.0%); then a
# configuration missing from the grid. About 3 s.
. "$(dirname "$0")/../support/e2e_lib.sh"
mkdir -p "$WORK/sys1" "$WORK/bad"
{
  echo "run,configuration,step_ms,predicted_step_ms,baseline_run,speedup_vs_ds_default,step_speedup_vs_ds_default"
  for k in 1 2 3; do
    step=$(echo "100 110 90" | cut -d' ' -f$k)
    echo "sitting-$k/A,A,$step,105,sitting-$k/A,1,1"
  done
  echo "sitting-1/B,B,200,252,sitting-1/A,1.0,1.0"
  echo "sitting-2/B,B,210,252,sitting-2/A,1.05,1.02"
  echo "sitting-3/B,B,220,252,sitting-3/A,0.8,0.98"
} >"$WORK/sys1/report.csv"
/usr/bin/python3 scripts/pmbs_stability.py "$WORK/sys1" >"$WORK/out.md" || fail "pmbs_stability.py exited $?"
expected="| sys1 | 1 of 2 | 20.0% | 20.0% | 2.0% | 0 of 1 | 1 of 1 |"
[ "$(tail -1 "$WORK/out.md")" = "$expected" ] || fail "expected '$expected', got '$(tail -1 "$WORK/out.md")'"
echo "run,configuration,step_ms" >"$WORK/bad/report.csv"
echo "sitting-1/A,A,100" >>"$WORK/bad/report.csv"
if /usr/bin/python3 scripts/pmbs_stability.py "$WORK/bad" >"$WORK/bad.md" 2>"$WORK/err"; then fail "a CSV without predicted_step_ms was accepted"; fi
grep -q "missing columns predicted_step_ms" "$WORK/err" || fail "unexpected error: $(cat "$WORK/err")"
mkdir -p "$WORK/sys2"
/usr/bin/python3 - "$WORK/sys2/report.csv" <<'PY'
import sys
tok = {"s0-b5e8-ov0-mb4": 1000, "s0-b5e8-ov0-mb12": 1200, "s1-ds_default-b5e8-ov0-mb4": 900,
       "s1-per_owner-b5e8-ov0-mb4": 980, "s2-ds_default-b5e8-ov0-mb4": 700,
       "s2-native_rs-b5e8-ov0-mb4": 800, "s3-rs-b5e8-ov0-mb4": 500}
configs = [f"s0-b5e8-ov0-mb{mb}" for mb in (4, 12)]
configs += [f"s{st}-{p}-b5e8-ov0-mb{mb}" for st in (1, 2)
            for p in ("allreduce", "ds_default", "per_owner", "native_rs") for mb in (4, 12)]
configs += [f"s3-{p}-b5e8-ov0-mb{mb}" for p in ("rs", "allreduce") for mb in (4, 12)]
configs += ["s2-per_owner-b2e4-ov0-mb4", "s2-per_owner-b2e4-ov1-mb4"]
with open(sys.argv[1], "w") as f:
    f.write("configuration,tokens_per_second,speedup_median,speedup_ci_low,speedup_ci_high\n")
    for c in configs:
        f.write(f"{c},{tok.get(c, 600)},1.1,1.0,1.2\n")
PY
/usr/bin/python3 scripts/pmbs_findings.py "$WORK/sys2" >"$WORK/findings.md" || fail "pmbs_findings.py exited $?"
for row in "| sys2 | 4 | 1,000 | 0.90 | 0.70 | 0.50 | per_owner 0.98 | native_rs 0.80 |" \
  "| sys2 | 12 | 1,200 | 0.50 | 0.50 | 0.50 | allreduce 0.50 | allreduce 0.50 |" \
  "| sys2 |$(printf ' 1.10 [1.00, 1.20] |%.0s' 1 2 3 4 5 6 7 8)" \
  "| sys2 | 1.20 | 0.67 | 0.61 | 0.86 | 1.00 | 0.75 | 1.20 | 1.00 |"; do
  grep -qxF "$row" "$WORK/findings.md" || fail "pmbs_findings.py: no row '$row' in: $(cat "$WORK/findings.md")"
done
grep -v "s3-allreduce-b5e8-ov0-mb4" "$WORK/sys2/report.csv" >"$WORK/bad/report.csv"
if /usr/bin/python3 scripts/pmbs_findings.py "$WORK/bad" >"$WORK/bad.md" 2>"$WORK/err"; then
  fail "pmbs_findings.py accepted a grid without s3-allreduce-b5e8-ov0-mb4"
fi
grep -q "no runs of s3-allreduce-b5e8-ov0-mb4" "$WORK/err" || fail "unexpected error: $(cat "$WORK/err")"
mkdir -p "$WORK/sys3"
printf '@config configs/pmbs/cpu_base.yaml\ns0 zero.stage=0 zero.overlap_comm=false train.micro_batch=4 system.compute=emulate system.emulate_micro_step_ms=10 system.emulate_optimizer_ms=2\n' >"$WORK/sys3/grid.txt"
echo '{"nodes": 2, "ranks_per_node": 1, "world": 2}' >"$WORK/sys3/cluster.json"
/usr/bin/python3 - "$WORK/sys3/commbench.json" <<'PY'
import json, sys
curves = [{"primitive": p, "dtype": "fp32", "points": [{"bytes": 1e9, "time_us": 1e4, "median_us": 1e4}]}
          for p in ("all_reduce", "reduce_scatter", "all_gather", "reduce", "broadcast", "all_to_all")]
json.dump({"communicator": "mpi", "world": 2, "ranks_per_node": 1, "cluster": {}, "curves": curves},
          open(sys.argv[1], "w"))
PY
{
  echo "configuration,step_ms,predicted_step_ms,accum_steps,micro_batch,world"
  for step in 48 50 55; do echo "s0,$step,60,3,4,2"; done
} >"$WORK/sys3/report.csv"
/usr/bin/python3 scripts/pmbs_repredict.py --zerotrain "$ZT_BIN" --rows "$WORK/sys3" >"$WORK/repredict.md" ||
  fail "pmbs_repredict.py exited $?"
for row in "| sys3 | 0 of 1 | 20.0% | 1 of 1 | 4.0% |" "| sys3 | s0 | 50.0 | 60.0 (+20.0%) | 52.0 (+4.0%) |"; do
  grep -qxF "$row" "$WORK/repredict.md" || fail "pmbs_repredict.py: no row '$row' in: $(cat "$WORK/repredict.md")"
done
sed -i 's/^s0,/s9,/' "$WORK/sys3/report.csv"
if /usr/bin/python3 scripts/pmbs_repredict.py --zerotrain "$ZT_BIN" "$WORK/sys3" >"$WORK/bad.md" 2>"$WORK/err"; then
  fail "pmbs_repredict.py accepted a configuration that is not in the grid"
fi
grep -q "configuration s9 is not in the grid" "$WORK/err" || fail "unexpected error: $(cat "$WORK/err")"
# scripts/pmbs_sittings_accuracy.py on two hand sittings of one system:
# predicted / measured 1.2, 1.0 and 0.9 (2 of 3 within 15%, the worst 1.2),
# then 0.95, 1.0 and 1.0; speed-ups 1.0 / 1.0 and 1.2 / 1.5 (spread 25.0%).
for i in 1 2; do mkdir -p "$WORK/sit$i/2x1-9mbit"; done
{
  echo "run,step_ms,predicted_step_ms,step_speedup_vs_ds_default"
  echo "a,100,120,1.0"; echo "b,100,100,1.2"; echo "c,100,90,"
} >"$WORK/sit1/2x1-9mbit/report.csv"
{
  echo "run,step_ms,predicted_step_ms,step_speedup_vs_ds_default"
  echo "a,100,95,1.0"; echo "b,100,100,1.5"; echo "c,100,100,"
} >"$WORK/sit2/2x1-9mbit/report.csv"
/usr/bin/python3 scripts/pmbs_sittings_accuracy.py "$WORK/sit1" "$WORK/sit2" >"$WORK/sittings.md" ||
  fail "pmbs_sittings_accuracy.py exited $?"
for row in "| 2x1-9mbit | 1 | 2 of 3 | 2 of 3 | 0.90-1.20 | a (1.200) |" \
  "| 2x1-9mbit | 2 | 3 of 3 | 3 of 3 | 0.95-1.00 | a (0.950) |" "| 2x1-9mbit | 2 | 25.0% | b |"; do
  grep -qxF "$row" "$WORK/sittings.md" || fail "pmbs_sittings_accuracy.py: no row '$row' in: $(cat "$WORK/sittings.md")"
done
mkdir -p "$WORK/sit3/3x1-9mbit" && cp "$WORK/sit1/2x1-9mbit/report.csv" "$WORK/sit3/3x1-9mbit/"
if /usr/bin/python3 scripts/pmbs_sittings_accuracy.py "$WORK/sit1" "$WORK/sit3" >"$WORK/bad.md" 2>"$WORK/err"; then
  fail "pmbs_sittings_accuracy.py accepted sittings of different systems"
fi
grep -q "systems 3x1-9mbit, expected those of" "$WORK/err" || fail "unexpected error: $(cat "$WORK/err")"
echo "PASS pmbs_tables"
