# DeepSpeed across releases (docs/deepspeed_releases.md): the change rows of the behaviour table
# follow from the committed behaviour summaries (tests/reference/deepspeed/release_behaviours/,
# exported from traces of each release); the diff names a planted difference; bad input is
# refused in one line. Needs only python3. Then, when a DeepSpeed cache holds installs of 0.12.3
# and 0.12.4 (ZT_DEEPSPEED_CACHE, default /work/cache/deepspeed: releases.py's), one variant is
# traced live on both and held against the committed summaries; otherwise one SKIPPED line.
. "$(dirname "$0")/../support/e2e_lib.sh"
DIR=tests/reference/deepspeed
PY=/usr/bin/python3

out=$($PY $DIR/release_table.py check 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || fail "the behaviour table's change rows do not follow from the summaries"
rows=$($PY -c "import json; print(len(json.load(open('$DIR/release_behaviours/changes.json'))['changes']))")
[ "$rows" -ge 12 ] || fail "expected at least 12 change rows, found $rows"
printf '%s\n' "$out" | grep -q "^release_table: $rows change rows, 0 problems$" || fail "no summary line"

# A planted difference: stage 2's default primitive of 0.12.4 set back to 0.12.3's in a copy.
cp -r $DIR/release_behaviours "$WORK/planted"
$PY - "$WORK/planted/0.12.4.json" <<'EOF' || fail "could not plant a difference"
import json, sys
data = json.load(open(sys.argv[1]))
data["variants"]["s2_default_b1e4"]["gradient primitive"] = "bwd: reduce fp32"
json.dump(data, open(sys.argv[1], "w"), indent=1)
EOF
planted=$($PY $DIR/release_table.py check --summaries "$WORK/planted" 2>&1)
[ $? -eq 1 ] || fail "a planted difference was not reported: $planted"
printf '%s\n' "$planted" | grep -q "^DIFFERS  s2-default-all-reduce: 0.12.3 -> 0.12.4: s2_default_b1e4 shows no change of 'gradient primitive'" ||
  fail "the planted difference is not named: $planted"
planted=$($PY $DIR/release_diff.py --summaries "$WORK/planted" 0.12.4 0.19.8 --variants s2_default_b1e4 2>&1)
[ $? -eq 1 ] || fail "release_diff missed the planted difference: $planted"
printf '%s\n' "$planted" | grep -q "^    gradient primitive: bwd: reduce fp32  ->  bwd: all_reduce fp32$" ||
  fail "release_diff does not name the planted behaviour: $planted"

expect_error "an unknown release" "0.99.0: no behaviour summary" \
  $PY $DIR/release_diff.py --summaries $DIR/release_behaviours 0.99.0 0.19.8
expect_error "a release without a trace" "0.99.0: no complete traces in $WORK/empty/0.99.0/traces" \
  $PY $DIR/release_diff.py --cache "$WORK/empty" 0.99.0 0.19.8
expect_error "a malformed release" "'0.19' is not a release number" \
  $PY $DIR/drift.py --version 0.19 --cache "$WORK/empty"

# Live: one variant traced on the two patches around stage 2's switch to all-reduce (0.12.4).
CACHE=${ZT_DEEPSPEED_CACHE:-/work/cache/deepspeed}
skip_live() {
  echo "SKIPPED deepspeed_releases_slice live trace: $*"
  echo "PASS deepspeed_releases_slice (committed summaries only)"
  exit 0
}
for v in 0.12.3 0.12.4; do
  [ -f "$CACHE/$v/site/complete" ] || skip_live "no DeepSpeed $v install in $CACHE (releases.py installs it)"
done
$PY -c "import torch" 2>/dev/null || skip_live "/usr/bin/python3 cannot import torch"
live=$(timeout 600 $PY $DIR/releases.py --cache "$CACHE" --traces "$WORK/traces" \
  --variants s2_default_b1e4 -- 0.12.3 0.12.4 2>&1) || fail "live trace failed: $live"
for v in 0.12.3 0.12.4; do
  same=$($PY $DIR/release_diff.py --cache "$WORK/traces" $v $DIR/release_behaviours/$v.json \
    --variants s2_default_b1e4 2>&1)
  [ $? -eq 0 ] || fail "DeepSpeed $v traced live differs from its committed summary: $same"
done
change=$($PY $DIR/release_diff.py --cache "$WORK/traces" 0.12.3 0.12.4 2>&1)
[ $? -eq 1 ] || fail "no change traced live between 0.12.3 and 0.12.4: $change"
printf '%s\n' "$change" | grep -q "^    gradient primitive: bwd: reduce fp32  ->  bwd: all_reduce fp32$" ||
  fail "the live 0.12.3 -> 0.12.4 diff lacks stage 2's switch to all-reduce: $change"
echo "PASS deepspeed_releases_slice (live: s2_default_b1e4 on 0.12.3 and 0.12.4)"
