# DeepSpeed's recorded collectives (tests/reference/deepspeed/expected/*.calls: every variant of
# tests/reference/deepspeed/variants.py, the unseen shapes, world sizes 2-4 and MiCS included, recorded from
# DeepSpeed 0.14.4 itself) against `zerotrain plan --deepspeed --calls`, call for call on every
# rank. Needs no DeepSpeed install and never skips; a few seconds. The live re-trace is
# tests/reference/deepspeed/reference.py (deepspeed_reference.sh runs four variants of it).
. "$(dirname "$0")/../support/e2e_lib.sh"
out=$(ZT_BIN=$ZT_BIN /usr/bin/python3 tests/reference/deepspeed/expected_calls.py check 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || fail "zerotrain's plan differs from DeepSpeed's recorded calls (above)"
n=$(ls tests/reference/deepspeed/expected/*.calls | wc -l)
[ "$n" -ge 106 ] || fail "expected at least 106 recorded variants (5 of them MiCS), found $n"
printf '%s\n' "$out" | grep -q "^deepspeed expected calls: $n variants, $n match, 0 differ$" ||
  fail "not every recorded variant matched"
printf '%s\n' "$out" | grep -q "^gradient paths traced: \([0-9]*\) of the registry's \1 DeepSpeed paths$" ||
  fail "the recorded variants do not exercise every DeepSpeed path of the registry"

# The checker itself fails on a wrong plan: one recorded call changed must be reported.
cp tests/reference/deepspeed/expected/s2_mrbafalse_b1e4.calls "$WORK/"
sed -i '0,/ reduce fp32 /s/ reduce fp32 \([0-9]*\) \([0-9]*\)/ reduce fp32 \1 9/' \
  "$WORK/s2_mrbafalse_b1e4.calls"
cmp -s "$WORK/s2_mrbafalse_b1e4.calls" tests/reference/deepspeed/expected/s2_mrbafalse_b1e4.calls &&
  fail "could not plant a wrong root in the copy"
planted=$(ZT_BIN=$ZT_BIN /usr/bin/python3 tests/reference/deepspeed/expected_calls.py check \
  s2_mrbafalse_b1e4 --expected "$WORK" 2>&1)
[ $? -eq 1 ] || fail "a planted wrong root was not reported: $planted"
printf '%s\n' "$planted" | grep -q "^DIFFERS  s2_mrbafalse_b1e4" || fail "no DIFFERS line: $planted"
echo "PASS deepspeed_calls"
