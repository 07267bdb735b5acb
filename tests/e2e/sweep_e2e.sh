#!/usr/bin/env bash
# End to end: three points of the reduced PMBS grid (stage 1 DeepSpeed default,
# stage 1 per-owner reduce, stage 2 true reduce-scatter) plus one broken point,
# swept with 2 ranks on a tiny model through scripts/sweep.sh, then
# `zerotrain report`. Checks that each path's gradient bytes land under its
# primitive with the exact volume and bus factor, that the broken point is
# recorded and fails the sweep without stopping it, that a rerun skips the
# finished points, and that the report has its speed-ups, labelled by what
# they divide, and plots with a key of the stage colours (or says why not).
# Prints "PASS sweep_e2e" or "FAIL sweep_e2e: reason".
# ZT_BIN: the zerotrain binary (default build/zerotrain); ZT_DATA_DIR: the
# byte-level corpus (default build/data/kjv). Run from anywhere.
set -u

fail() {
  echo "FAIL sweep_e2e: $*"
  exit 1
}

ZT_BIN=${ZT_BIN:-build/zerotrain}
ZT_DATA_DIR=${ZT_DATA_DIR:-build/data/kjv}
[ -x "$ZT_BIN" ] || fail "no zerotrain binary at '$ZT_BIN' (set ZT_BIN)"
compgen -G "$ZT_DATA_DIR/train_*.bin" >/dev/null ||
  fail "no train_*.bin under '$ZT_DATA_DIR' (set ZT_DATA_DIR, or run scripts/prepare_default_corpus.sh)"
[ -x /usr/bin/python3 ] || fail "/usr/bin/python3 is needed for the checks"
ZT_BIN=$(realpath "$ZT_BIN")
ZT_DATA_DIR=$(realpath "$ZT_DATA_DIR")
cd "$(dirname "$0")/../.." || fail "cannot enter the repository root"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
grid="$work/grid.txt"
{
  cat configs/pmbs/grid_cpu_quick.txt
  echo "broken zero.stage=7"
} >"$grid"
sweep=(scripts/sweep.sh --grid "$grid" --only '^(s1-ds_default|s1-per_owner|s2-native_rs)-|^broken$'
  -np 2 --bin "$ZT_BIN" --out "$work/runs"
  --set "data.train=$ZT_DATA_DIR/train_*.bin" --set "data.val=$ZT_DATA_DIR/val_*.bin"
  --set train.steps=2)

"${sweep[@]}" >"$work/sweep.log" 2>&1
rc=$?
[ "$rc" = 1 ] || fail "sweep exited $rc, expected 1 for the broken point: $(tail -3 "$work/sweep.log")"
grep -q '^\[4/4\] broken: FAILED' "$work/sweep.log" || fail "no FAILED progress line for the broken point"
awk -F'\t' '$1 == "broken" && $2 == 2 && $3 ~ /broken\/train.log$/ { found = 1 } END { exit !found }' \
  "$work/runs/failed.tsv" || fail "failed.tsv does not record the broken point with exit code 2: $(cat "$work/runs/failed.tsv")"
for p in s1-ds_default s1-per_owner s2-native_rs; do
  [ -s "$work/runs/$p-b5e8-ov0-mb4/summary.json" ] || fail "$p produced no summary.json: $(tail -3 "$work/runs/$p-b5e8-ov0-mb4/train.log")"
done

"${sweep[@]}" >"$work/resume.log" 2>&1
[ "$(grep -c 'skipped (summary.json exists)' "$work/resume.log")" = 3 ] ||
  fail "a rerun did not skip the 3 finished points: $(cat "$work/resume.log")"

"$ZT_BIN" report "$work/runs" --out "$work/report" >"$work/report.log" 2>&1 ||
  fail "report exited $?: $(cat "$work/report.log")"

/usr/bin/python3 - "$work/runs" "$work/report" <<'EOF' || exit 1
import csv, json, os, sys

runs, report = sys.argv[1], sys.argv[2]

def fail(why):
    print("FAIL sweep_e2e: " + why)
    sys.exit(1)

rows = {r["run"]: r for r in csv.DictReader(open(os.path.join(report, "report.csv")))}
names = {"s1-ds_default-b5e8-ov0-mb4", "s1-per_owner-b5e8-ov0-mb4", "s2-native_rs-b5e8-ov0-mb4"}
if set(rows) != names:
    fail(f"report.csv rows {sorted(rows)}, expected {sorted(names)}")

primitives = {"all_reduce": "grad_all_reduce", "reduce": "grad_reduce", "reduce_scatter": "grad_reduce_scatter"}
expect = {  # run: (grad_path, primitive carrying the gradients)
    "s1-ds_default-b5e8-ov0-mb4": ("multi_rank_allreduce", "all_reduce"),
    "s1-per_owner-b5e8-ov0-mb4": ("per_owner_reduce", "reduce"),
    "s2-native_rs-b5e8-ov0-mb4": ("reduce_scatter", "reduce_scatter"),
}
for name, (path, carrier) in expect.items():
    r = rows[name]
    s = json.load(open(os.path.join(runs, name, "summary.json")))
    W = int(r["world"])
    if W != 2 or r["grad_path"] != path:
        fail(f"{name}: world {W}, grad path {r['grad_path']}; expected 2, {path}")
    # Every path moves the whole gradient once per reduction round (stage 1
    # once per step, stage 2 once per micro-step): DeepSpeed's paths its real
    # elements, the native reduce-scatter its aligned chunks, padding included.
    rounds = int(r["accum_steps"]) if r["stage"] == "2" else 1
    counted = s["padded_params"] if path == "reduce_scatter" else s["params"]
    volume = 4 * counted * rounds
    factor = {"all_reduce": 2 * (W - 1) / W, "reduce": 1.0, "reduce_scatter": (W - 1) / W}[carrier]
    for prim, col in primitives.items():
        payload, bus = float(r[col + "_bytes"]), float(r[col + "_bus_bytes"])
        if prim == carrier:
            if payload != volume:
                fail(f"{name}: {prim} payload {payload}, expected 4 x {counted} x {rounds} = {volume}")
            if abs(bus - payload * factor) > 1e-6 * payload:
                fail(f"{name}: {prim} bus bytes {bus}, expected payload x {factor}")
        elif payload != 0 or bus != 0:
            fail(f"{name}: gradients also under {prim} ({payload} B); expected only {carrier}")

ds, owner, rs = (rows[n] for n in sorted(expect))
if abs(float(ds["speedup_vs_ds_default"]) - 1) > 1e-12:
    fail("the DeepSpeed-default row's speed-up is not 1")
if owner["baseline_run"] != "s1-ds_default-b5e8-ov0-mb4":
    fail(f"per-owner row's baseline is '{owner['baseline_run']}'")
want = float(owner["tokens_per_second"]) / float(ds["tokens_per_second"])
if abs(float(owner["speedup_vs_ds_default"]) - want) > 1e-9 * want:
    fail("per-owner speed-up is not its tok/s over the default's")
if rs["speedup_vs_ds_default"] != "" or rs["baseline_run"] != "":
    fail("the stage-2 reduce-scatter row has a speed-up but no stage-2 default ran")

md = open(os.path.join(report, "report.md")).read()
if md.count("| s1-") + md.count("| s2-") != 3 or "| — |" not in md:
    fail("report.md lacks the three table rows or the '—' of the row without baseline")
if "| speed-up (tokens/s) vs DS default |" not in md:
    fail("report.md's table does not say its speed-up divides tokens/s")
if "`broken`" not in md:
    fail("report.md does not list the directory without summary.json")
if "![tok/s per configuration](throughput.png)" in md:
    for png in ("throughput.png", "bytes_per_primitive.png"):
        if os.path.getsize(os.path.join(report, png)) < 1000:
            fail(f"{png} is missing or empty")
    # The figures as plot_report.py draws them, read back for their keys and notes.
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sys.path.insert(0, "scripts")
    import plot_report
    table = list(csv.DictReader(open(os.path.join(report, "report.csv"))))
    stages = ["ZeRO stage 1", "ZeRO stage 2"]
    ax = plot_report.throughput_figure(plt, table).axes[0]
    keys = [t.get_text() for t in ax.get_legend().get_texts()]
    if keys != stages:
        fail(f"throughput.png's colour key is {keys}, expected {stages}")
    notes = [t.get_text() for t in ax.texts if "DS default" in t.get_text()]
    if len(notes) != 2 or not all(n.endswith("x DS default, tokens/s)") for n in notes):
        fail(f"throughput.png's speed-up notes do not say tokens/s: {notes}")
    for r in table:
        r["predicted_step_ms"] = r["step_ms"]
    ax = plot_report.predicted_figure(plt, table).axes[0]
    keys = [t.get_text() for t in ax.get_legend().get_texts()]
    if keys[-2:] != stages:
        fail(f"predicted_vs_measured.png's key is {keys}, expected it to end with {stages}")
elif "Plots skipped:" not in md:
    fail("report.md neither embeds the plots nor says why they were skipped")
EOF
echo "PASS sweep_e2e"
