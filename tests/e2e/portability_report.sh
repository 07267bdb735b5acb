#!/usr/bin/env bash
# End to end: `zerotrain report --portability` over three systems built from
# real tiny runs: A = two configurations at W = 1, B = the same two at W = 2,
# C = A's runs copied as two sittings with their tok/s edited (one
# configuration left out), so that C names the same system as A. Checks every
# CSV efficiency and PP against an independent recomputation, the sittings'
# median, the "did not run" row, the disambiguated names, PP = efficiency over
# one system, the cascade plots (or why not), and the one-line errors.
# Prints "PASS portability_report" or "FAIL ...".
source "$(dirname "$0")/../support/e2e_lib.sh"
[ -x "$ZT_BIN" ] || fail "no zerotrain binary at '$ZT_BIN' (set ZT_BIN)"
ZT_BIN=$(realpath "$ZT_BIN")
ZT_DATA_DIR=$(realpath "$ZT_DATA_DIR")
cd "$(dirname "$0")/../.." || fail "cannot enter the repository root"

for w in 1 2; do
  for mb in 2 4; do
    dir="$WORK/w$w/mb$mb"
    mpirun -np "$w" "$ZT_BIN" train configs/tiny.yaml "${SMALL[@]}" --set train.steps=2 \
      --set train.micro_batch=$mb --run-dir "$dir" >"$WORK/train-w$w-mb$mb.log" 2>&1 ||
      fail "training W=$w mb=$mb: $(tail -3 "$WORK/train-w$w-mb$mb.log")"
  done
done
grep -q '"host":{"name":"' "$WORK/w1/mb2/summary.json" || fail "summary.json has no host name"

# C: A's mb2 in two sittings at 100 and 300 tok/s (median 200); mb4 left out.
for k in 1 2; do
  mkdir -p "$WORK/c/sitting-$k/mb2"
  /usr/bin/python3 - "$WORK/w1/mb2/summary.json" "$WORK/c/sitting-$k/mb2/summary.json" \
    "$((k * 200 - 100))" <<'PY' || fail "editing a summary"
import json, sys
s = json.load(open(sys.argv[1]))
s["tokens_per_second"] = float(sys.argv[3])
json.dump(s, open(sys.argv[2], "w"))
PY
done

"$ZT_BIN" report --portability "$WORK/w1" "$WORK/w2" "$WORK/c" --out "$WORK/rep" \
  >"$WORK/rep.log" 2>&1 || fail "report --portability exited $?: $(cat "$WORK/rep.log")"

/usr/bin/python3 - "$WORK" <<'PY' || exit 1
import csv, json, sys
work = sys.argv[1]
def fail(m):
    print("FAIL portability_report: " + m); sys.exit(1)
rows = list(csv.DictReader(open(f"{work}/rep/report_portability.csv")))
if len(rows) != 6: fail(f"expected 2 configurations x 3 systems = 6 rows, got {len(rows)}")
tok = {}
for sys_dir, sub in (("w1", ""), ("w2", "")):
    for mb in ("mb2", "mb4"):
        tok[(sys_dir, mb)] = json.load(open(f"{work}/{sys_dir}/{mb}/summary.json"))["tokens_per_second"]
tok[("c", "mb2")] = 200.0  # the median of 100 and 300
s = json.load(open(f"{work}/w1/mb2/summary.json"))
m = s["config"]["model"]
flops = 6 * s["params"] + 6 * m["n_layer"] * m["n_embd"] * m["seq_len"]
by = {(r["runs_dir"].rstrip("/").split("/")[-1], r["configuration"]): r for r in rows}
names = {r["system"] for r in rows}
if len(names) != 3: fail(f"systems not distinct: {names}")
if not any(n.endswith("[w1]") for n in names) or not any(n.endswith("[c]") for n in names):
    fail(f"A and C name the same system but were not disambiguated by directory: {names}")
app = {}
for sys_dir in ("w1", "w2", "c"):
    best = max(v for (d, _), v in tok.items() if d == sys_dir)
    for mb in ("mb2", "mb4"):
        r = by[(sys_dir, mb)]
        if (sys_dir, mb) not in tok:
            if r["ran"] != "false" or r["application_efficiency"] != "": fail(f"{sys_dir}/{mb} should not have run: {r}")
            continue
        t = tok[(sys_dir, mb)]
        if abs(float(r["tokens_per_second"]) - t) > 1e-6 * t: fail(f"{sys_dir}/{mb} tok/s {r['tokens_per_second']} != {t}")
        app[(sys_dir, mb)] = t / best
        if abs(float(r["application_efficiency"]) - t / best) > 1e-9: fail(f"{sys_dir}/{mb} application efficiency {r['application_efficiency']} != {t / best}")
        if abs(float(r["model_flops_per_token"]) - flops) > 1e-6 * flops: fail(f"flops per token {r['model_flops_per_token']} != {flops}")
        if r["in_architectural_h"] == "true":
            if not r["peak_source"].startswith("measured sgemm, "): fail(f"CPU peak not labelled as a measured sgemm: {r['peak_source']}")
            arch = t * flops / float(r["peak_flops_per_second"])
            if abs(float(r["architectural_efficiency"]) - arch) > 1e-9 * max(arch, 1e-30): fail(f"architectural efficiency {r['architectural_efficiency']} != {arch}")
    if by[(sys_dir, "mb2")]["sittings_ran"] != ("2" if sys_dir == "c" else "1"): fail(f"{sys_dir}: sittings_ran {by[(sys_dir, 'mb2')]['sittings_ran']}")
pp_mb2 = 3 / sum(1 / app[(d, "mb2")] for d in ("w1", "w2", "c"))
if abs(float(by[("w1", "mb2")]["pp_application"]) - pp_mb2) > 1e-9: fail(f"PP(mb2) {by[('w1', 'mb2')]['pp_application']} != {pp_mb2}")
if float(by[("w1", "mb4")]["pp_application"]) != 0: fail("PP(mb4) should be 0: it did not run on C")
md = open(f"{work}/rep/report_portability.md").read()
for want in ("did not run", "Most portable by application efficiency: **mb2**", "median over 2 sittings", "6·N + 6·L·C·T", "measured sgemm"):
    if want not in md: fail(f"report_portability.md lacks '{want}'")
PY

# One system: PP equals the efficiency itself.
"$ZT_BIN" report --portability "$WORK/w2" --out "$WORK/one" --no-plots >"$WORK/one.log" 2>&1 ||
  fail "one RUNS_DIR exited $?: $(cat "$WORK/one.log")"
/usr/bin/python3 - "$WORK/one/report_portability.csv" <<'PY' || exit 1
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    for kind in ("application", "architectural"):
        e, pp = r[f"{kind}_efficiency"], r[f"pp_{kind}"]
        if e and abs(float(e) - float(pp)) > 1e-9:
            print(f"FAIL portability_report: one system: PP {pp} != {kind} efficiency {e}"); sys.exit(1)
PY
grep -q 'Plots skipped: --no-plots was given' "$WORK/one/report_portability.md" ||
  fail "--no-plots not stated in report_portability.md"

if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  [ -s "$WORK/rep/portability_cascade_application.png" ] || fail "no cascade plot"
  grep -q 'portability_cascade_application.png' "$WORK/rep/report_portability.md" ||
    fail "report_portability.md does not embed the cascade plot"
else
  grep -q 'Plots skipped: .*matplotlib' "$WORK/rep/report_portability.md" ||
    fail "report_portability.md does not say why there are no plots"
fi

# A projection (--project): labelled as one, and at 1 x 1 rank (no call at
# all) its tok/s is the global batch over A micro-steps plus the optimizer,
# each as the run measured them.
"$ZT_BIN" report --portability "$WORK/w1" --project 1x1:100mbit --project 2x2:100mbit \
  --out "$WORK/proj" --no-plots >"$WORK/proj.log" 2>&1 || fail "report --project exited $?: $(cat "$WORK/proj.log")"
/usr/bin/python3 - "$WORK" <<'PY' || exit 1
import csv, json, sys
work = sys.argv[1]
def fail(m):
    print("FAIL portability_report: --project: " + m); sys.exit(1)
rows = list(csv.DictReader(open(f"{work}/proj/report_portability.csv")))
proj = [r for r in rows if r["system"].startswith("projection (step-time model): 1x1 ranks")]
if len(proj) != 2: fail(f"expected 2 rows of the 1x1 projection, got {[r['system'] for r in rows]}")
for r in proj:
    s = json.load(open(f"{work}/w1/{r['configuration']}/summary.json"))
    cfg, t = s["config"], s["timing"]
    tokens = cfg["train"]["global_batch_tokens"]
    A = tokens // (cfg["train"]["micro_batch"] * cfg["model"]["seq_len"])
    want = tokens / ((A * t["compute_ms_per_micro_step"] + t["optimizer_ms"]) / 1e3)
    got = float(r["tokens_per_second"])
    if abs(got - want) > 1e-6 * want: fail(f"{r['configuration']}: {got} tok/s, expected {want}")
    if r["runs_dir"] != "": fail(f"a projection has a RUNS_DIR: {r['runs_dir']}")
if not any(r["system"].startswith("projection (step-time model): 2x2 ranks at 100mbit") for r in rows):
    fail("no 2x2 projection")
PY
grep -q 'a projection, not measured' "$WORK/proj/report_portability.md" ||
  fail "report_portability.md does not label the projection"
expect_error "bad --project" "--project 3x: expected NxG:RATE" \
  "$ZT_BIN" report --portability "$WORK/w1" --project 3x --out "$WORK/x"
expect_error "--project without --portability" "--project adds a system to --portability" \
  "$ZT_BIN" report "$WORK/w1" --project 2x2:100mbit

mkdir -p "$WORK/empty/notarun" "$WORK/other/mb2"
/usr/bin/python3 - "$WORK/w1/mb2/summary.json" "$WORK/other/mb2/summary.json" <<'PY' || fail "editing a summary"
import json, sys
s = json.load(open(sys.argv[1]))
s["config"]["model"]["n_layer"] += 1
json.dump(s, open(sys.argv[2], "w"))
PY
expect_error "missing RUNS_DIR" "RUNS_DIR $WORK/nope: not a directory" \
  "$ZT_BIN" report --portability "$WORK/w1" "$WORK/nope" --out "$WORK/x"
expect_error "RUNS_DIR without runs" "RUNS_DIR $WORK/empty has no runs" \
  "$ZT_BIN" report --portability "$WORK/w1" "$WORK/empty" --out "$WORK/x"
expect_error "mismatched models" "configuration mb2 is a different model on two systems" \
  "$ZT_BIN" report --portability "$WORK/w1" "$WORK/other" --out "$WORK/x"
expect_error "two RUNS_DIRs without --portability" "more than one RUNS_DIR needs --portability" \
  "$ZT_BIN" report "$WORK/w1" "$WORK/w2"
expect_error "--network with --portability" "does not apply to --portability" \
  "$ZT_BIN" report --portability "$WORK/w1" --network configs/networks/h100_ib400_8gpu.json
expect_error "the same RUNS_DIR twice" "is given twice" \
  "$ZT_BIN" report --portability "$WORK/w1" "$WORK/w1/"
echo "PASS portability_report"
