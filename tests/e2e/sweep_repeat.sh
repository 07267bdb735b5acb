# Repeated sittings end to end: scripts/sweep.sh --repeat 2 on a 2-point grid
# (stage 1 DeepSpeed default and per-owner reduce, the tiny config shrunk, 2
# ranks, 2 steps) runs the points interleaved (sitting 1: both, then sitting 2:
# both) into OUT/sitting-K/NAME, and a rerun skips all four; --repeat 1 keeps
# OUT/NAME. `zerotrain report` on the sittings prints the per-sitting tok/s,
# the median speed-up with its bootstrap interval, rankings and stability, and
# report.csv's median/interval columns agree with the per-sitting speed-ups.
# A missing run is one line, not an error; sittings with no run in common, a
# bad sitting name, and --repeat 0 or x are one-line errors.
. "$(dirname "$0")/../support/e2e_lib.sh"
grid="$WORK/grid.txt"
cat >"$grid" <<'GRID'
@config configs/tiny.yaml
ds_default zero.stage=1 zero.reduce_scatter=true zero.use_multi_rank_bucket_allreduce=true
per_owner zero.stage=1 zero.reduce_scatter=true zero.use_multi_rank_bucket_allreduce=false
GRID
sweep=(scripts/sweep.sh --grid "$grid" -np 2 --bin "$ZT_BIN" "${SMALL[@]}" --set train.steps=2)

expect_error "--repeat 0" "--repeat: expected a whole number of sittings >= 1, got '0'" \
  "${sweep[@]}" --out "$WORK/bad" --repeat 0
expect_error "--repeat x" "--repeat: expected a whole number of sittings >= 1, got 'x'" \
  "${sweep[@]}" --out "$WORK/bad" --repeat x
[ ! -e "$WORK/bad" ] || fail "a refused --repeat created the output directory"

"${sweep[@]}" --out "$WORK/one" --repeat 1 --dry-run >"$WORK/one.txt" 2>&1 || fail "dry run exited $?"
[ "$(grep -c -- "--run-dir $WORK/one/ds_default \|--run-dir $WORK/one/per_owner " "$WORK/one.txt")" = 2 ] ||
  fail "--repeat 1 does not keep OUT/NAME: $(cat "$WORK/one.txt")"

"${sweep[@]}" --out "$WORK/runs" --repeat 2 >"$WORK/sweep.log" 2>&1 ||
  fail "sweep --repeat 2 exited $?: $(tail -3 "$WORK/sweep.log")"
order=$(grep -o '^\[[0-9]/4\] [^:]*' "$WORK/sweep.log" | tr '\n' ' ')
want="[1/4] sitting-1/ds_default [2/4] sitting-1/per_owner [3/4] sitting-2/ds_default [4/4] sitting-2/per_owner "
[ "$order" = "$want" ] || fail "runs not interleaved: '$order', expected '$want'"
for k in 1 2; do
  for p in ds_default per_owner; do
    [ -s "$WORK/runs/sitting-$k/$p/summary.json" ] || fail "no sitting-$k/$p/summary.json"
  done
done
[ ! -e "$WORK/runs/ds_default" ] || fail "--repeat 2 also wrote OUT/NAME"
"${sweep[@]}" --out "$WORK/runs" --repeat 2 >"$WORK/resume.log" 2>&1 || fail "rerun exited $?"
[ "$(grep -c 'skipped (summary.json exists)' "$WORK/resume.log")" = 4 ] ||
  fail "a rerun did not skip the 4 finished runs: $(cat "$WORK/resume.log")"

"$ZT_BIN" report "$WORK/runs" --no-plots >"$WORK/report.log" 2>&1 ||
  fail "report exited $?: $(cat "$WORK/report.log")"
md="$WORK/runs/report.md"
for text in "## Repeated sittings" "### Tokens per second per sitting" "| sitting 1 | sitting 2 | median |" \
  "| speed-up (tokens/s) median | 95% interval | min | max | speed-up (median step) median |" \
  "2000 times" "### Rankings" "Not separated (95% intervals overlap):" "### Stability" \
  "Path rankings that agree in every sitting" "| sitting-2/per_owner |"; do
  grep -qF -- "$text" "$md" || fail "report.md lacks '$text'"
done
/usr/bin/python3 - "$WORK/runs" <<'PY' || exit 1
import csv, json, os, statistics, sys
runs = sys.argv[1]
def fail(why):
    print("FAIL: " + why)
    sys.exit(1)
rows = {r["run"]: r for r in csv.DictReader(open(os.path.join(runs, "report.csv")))}
if set(rows) != {f"sitting-{k}/{p}" for k in (1, 2) for p in ("ds_default", "per_owner")}:
    fail(f"report.csv rows {sorted(rows)}")
def tok(k, p):
    return json.load(open(os.path.join(runs, f"sitting-{k}", p, "summary.json")))["tokens_per_second"]
ratios = [tok(k, "per_owner") / tok(k, "ds_default") for k in (1, 2)]
r = rows["sitting-2/per_owner"]
if r["configuration"] != "per_owner" or r["sitting"] != "2" or r["sittings"] != "2":
    fail(f"configuration/sitting/sittings columns: {r['configuration']} {r['sitting']} {r['sittings']}")
got = {c: float(r["speedup_" + c]) for c in ("median", "ci_low", "ci_high", "min", "max")}
want = {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}
for c, v in want.items():
    if abs(got[c] - v) > 1e-9 * v:
        fail(f"speedup_{c} {got[c]}, expected {v} from the per-sitting tok/s")
# Two sittings: every resampled median is one of min, max or their mean.
if not (got["min"] <= got["ci_low"] <= got["median"] <= got["ci_high"] <= got["max"]):
    fail(f"interval [{got['ci_low']}, {got['ci_high']}] not inside min..max around the median")
base = rows["sitting-1/ds_default"]
if any(float(base["speedup_" + c]) != 1 for c in ("median", "ci_low", "ci_high", "min", "max")):
    fail("the baseline's speed-up statistics are not 1")
if not r["step_speedup_median"]:
    fail("no step_speedup_median")
# The summaries were written in the interleaved order too (nanosecond mtimes).
order = sorted((os.stat(os.path.join(runs, k, p, "summary.json")).st_mtime_ns, f"{k}/{p}")
               for k in ("sitting-1", "sitting-2") for p in ("ds_default", "per_owner"))
want = ["sitting-1/ds_default", "sitting-1/per_owner", "sitting-2/ds_default", "sitting-2/per_owner"]
if [name for _, name in order] != want:
    fail(f"summaries written in the order {[name for _, name in order]}, expected {want}")
PY

# A missing run: one line, the rest still reported.
mv "$WORK/runs/sitting-2/per_owner/summary.json" "$WORK/runs/sitting-2/per_owner/summary.failed.json"
"$ZT_BIN" report "$WORK/runs" --no-plots --out "$WORK/partial" >"$WORK/partial.log" 2>&1 ||
  fail "report with a missing run exited $?: $(cat "$WORK/partial.log")"
[ "$(grep -c 'lacks' "$WORK/partial.log")" = 1 ] &&
  grep -qF "report: sitting-2 lacks per_owner (present in 1 of 2 sittings" "$WORK/partial.log" ||
  fail "the missing run is not one line: $(cat "$WORK/partial.log")"

# No run in common: sitting 1 has only ds_default, sitting 2 only per_owner.
mkdir -p "$WORK/apart/sitting-1" "$WORK/apart/sitting-2"
cp -r "$WORK/runs/sitting-1/ds_default" "$WORK/apart/sitting-1/"
cp -r "$WORK/runs/sitting-1/per_owner" "$WORK/apart/sitting-2/"
expect_error "sittings apart" "the sittings have no run in common (sitting-1: 1 runs, sitting-2: 1 runs)" \
  "$ZT_BIN" report "$WORK/apart" --no-plots
mkdir "$WORK/apart/sitting-0"
expect_error "sitting-0" "sitting-0: expected sitting-K with K a whole number >= 1" \
  "$ZT_BIN" report "$WORK/apart" --no-plots
echo "PASS sweep_repeat ($expect_error_count errors checked)"
