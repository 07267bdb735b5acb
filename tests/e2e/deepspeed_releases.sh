# zerotrain emulating DeepSpeed releases (zero.deepspeed_version) against those releases'
# recorded collectives: tests/reference/deepspeed/expected_releases/<V>/*.calls, a slice of the
# traces of tests/reference/deepspeed/RELEASES.md where behaviour differs between releases
# (0.10.3: per-slice reduces, the fp32 overflow check, stage 1's forced switches, the whole-buffer
# all-reduce, MiCS's start-up gathers over the shard group; 0.12.6: use_multi_rank_bucket_allreduce
# false all-reduces; 0.13.5; 0.14.4: hpZ's first step gathering zero.Init's secondary pieces; 0.19.2 and
# 0.19.8 around 0.19.3: the bf16 overflow check, stage 3's fresh first gather; ZeRO++'s qwZ and
# qgZ, traced on the harness's CPU stand-in for the quantizer kernels, on 0.14.4, and all three
# switches together on 0.10.3 and 0.19.8), call for call on
# every rank and in every traced step (start-up, the three optimizer steps) with
# `zerotrain plan --deepspeed --calls --set zero.deepspeed_version=V`. Needs no DeepSpeed and no
# trace cache; a few seconds. The whole matrix: tests/reference/deepspeed/check_releases.py check.
. "$(dirname "$0")/../support/e2e_lib.sh"
check=tests/reference/deepspeed/check_releases.py
out=$(ZT_BIN=$ZT_BIN /usr/bin/python3 $check slice 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || fail "zerotrain's emulation differs from a release's recorded calls (above)"
n=$(find tests/reference/deepspeed/expected_releases -name '*.calls' | wc -l)
[ "$n" -ge 14 ] || fail "expected at least 14 recorded release variants, found $n"
releases=$(find tests/reference/deepspeed/expected_releases -mindepth 1 -maxdepth 1 -type d | wc -l)
printf '%s\n' "$out" | grep -q "^deepspeed release slice: $n variants over $releases releases .*, $n match, 0 differ$" ||
  fail "not every recorded release variant matched"
partial=$(grep -L '^trace_step -1' tests/reference/deepspeed/expected_releases/*/*.calls)
[ -z "$partial" ] || fail "recorded without start-up and the first step (check_releases.py record): $partial"

# The checker fails on a wrong emulation: 0.12.6's use_multi_rank_bucket_allreduce: false
# all-reduces; planting 0.13's rooted reduce in a copy must be reported.
mkdir -p "$WORK/0.12.6"
cp tests/reference/deepspeed/expected_releases/0.12.6/s2_mrbafalse_b1e4.calls "$WORK/0.12.6/"
sed -i '0,/^bwd 0 all_reduce fp32 \([0-9]*\) -1/s//bwd 0 reduce fp32 \1 3/' \
  "$WORK/0.12.6/s2_mrbafalse_b1e4.calls"
cmp -s "$WORK/0.12.6/s2_mrbafalse_b1e4.calls" \
  tests/reference/deepspeed/expected_releases/0.12.6/s2_mrbafalse_b1e4.calls &&
  fail "could not plant a rooted reduce in the copy"
planted=$(ZT_BIN=$ZT_BIN /usr/bin/python3 $check slice --expected "$WORK" 2>&1)
[ $? -eq 1 ] || fail "a planted rooted reduce was not reported: $planted"
printf '%s\n' "$planted" | grep -q "^DIFFERS  0.12.6 s2_mrbafalse_b1e4" || fail "no DIFFERS line: $planted"

# Start-up is compared too: 0.10.3's stage 2 calls barrier() once in its optimizer's
# construction; a copy without it must be reported at start-up, and pass with --steady-only.
mkdir -p "$WORK/startup/0.10.3"
sed '/^init 0 barrier/d' tests/reference/deepspeed/expected_releases/0.10.3/s2_default_b1e4.calls \
  > "$WORK/startup/0.10.3/s2_default_b1e4.calls"
planted=$(ZT_BIN=$ZT_BIN /usr/bin/python3 $check slice --expected "$WORK/startup" 2>&1)
[ $? -eq 1 ] || fail "a missing start-up barrier was not reported: $planted"
printf '%s\n' "$planted" | grep -q "start-up (trace step -1), rank 0: differs at call 28" ||
  fail "the start-up difference is not named: $planted"
ZT_BIN=$ZT_BIN /usr/bin/python3 $check slice --expected "$WORK/startup" --steady-only >/dev/null ||
  fail "--steady-only compared more than the steady step"

# A release outside the verified range is refused in one line naming the range, as a config
# key and as explain's option.
printf '{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}\n' > "$WORK/ds.json"
expect_error "config key" "zero.deepspeed_version=0.9.5: expected a DeepSpeed release from 0.10.3 to 0.19.8" \
  "$ZT_BIN" plan configs/pmbs/cpu_base.yaml --world 4 --set zero.deepspeed_version=0.9.5
expect_error "explain option" "--deepspeed-version 0.20.0: expected a DeepSpeed release from 0.10.3 to 0.19.8" \
  "$ZT_BIN" explain "$WORK/ds.json" --world 4 --deepspeed-version 0.20.0
expect_error "not a release" "expected a DeepSpeed release MAJOR.MINOR.PATCH" \
  "$ZT_BIN" plan configs/pmbs/cpu_base.yaml --world 4 --set zero.deepspeed_version=0.14

# explain names what changed between two releases for this config: stage 2's default path.
ex=$("$ZT_BIN" explain "$WORK/ds.json" --world 4 --deepspeed-version 0.12.3 --compare-to 0.14.4 2>&1) ||
  fail "explain --deepspeed-version failed: $ex"
printf '%s\n' "$ex" | grep -q "^changes from DeepSpeed 0.14.4 to 0.12.3 for this config:" ||
  fail "no changes section: $ex"
printf '%s\n' "$ex" | grep -q "no such key (0.12.4 adds it)" || fail "the missing key is not named: $ex"
printf '%s\n' "$ex" | grep -q "gradient path: per_slice_reduce" || fail "0.12.3's path is not named: $ex"
echo "PASS deepspeed_releases"
