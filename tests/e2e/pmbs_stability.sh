# scripts/pmbs_stability.py (docs/PMBS.md's stability and model tables) on a
# report.csv written here with hand-computed answers: configuration A is its
# own baseline (steps 100/110/90 ms, median 100, predicted 105: 5% off);
# B's steps 200/210/220 (median 210, predicted 252: 20% off), its tokens/s
# speed-ups 1.0/1.05/0.8 (median 1.0: 20% deviation) and median-step
# speed-ups 1.0/1.02/0.98 (2%). Then a CSV without a needed column. About 1 s.
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
echo "PASS pmbs_stability"
