# DeepSpeed itself against zerotrain, call for call: four variants of tests/reference/deepspeed/
# (stage 1 with a tensor larger than the bucket, stage 2's default at W = 3, stage 2's
# per-owner reduces, stage 3) run on real DeepSpeed 0.14.4 over CPU ranks and on zerotrain
# (`train --deepspeed`, the same ds_config); any difference in calls, dtypes or bytes per
# primitive, or in the ordered sequence, fails. Prints SKIPPED when DeepSpeed cannot be
# installed or imported. DeepSpeed's traces are kept in $BUILD/deepspeed-ref-e2e and reused
# while the variant is unchanged (zerotrain always runs again): about 4 minutes the first
# time on a loaded 2-core machine, 10 s after.
. "$(dirname "$0")/../support/e2e_lib.sh"
BUILD_DIR=$(dirname "$ZT_BIN")
SITE=${ZT_DEEPSPEED_SITE:-$BUILD_DIR/deepspeed-site}
OUT=$BUILD_DIR/deepspeed-ref-e2e
VARIANTS=(s1_default_b1e4 s2_default_b2e4_w3 s2_mrbafalse_b1e4 s3_default_w2)

# DeepSpeed's shared-memory files this run leaves behind are removed, and only those.
shm_before=$(ls -d /dev/shm/deepspeed_* 2>/dev/null | sort)
clean_shm() {
  comm -13 <(printf '%s\n' "$shm_before") <(ls -d /dev/shm/deepspeed_* 2>/dev/null | sort) |
    while read -r f; do [ -n "$f" ] && rm -rf -- "$f"; done
  rm -rf "$WORK"
}
trap clean_shm EXIT

# Without a network pip fails fast instead of retrying for minutes.
out=$(PIP_DEFAULT_TIMEOUT=20 PIP_RETRIES=1 /usr/bin/python3 tests/reference/deepspeed/reference.py \
      "${VARIANTS[@]}" --reuse --out "$OUT" --site "$SITE" 2>&1)
rc=$?
printf '%s\n' "$out"
if printf '%s\n' "$out" | grep -q '^SKIPPED'; then
  [ "$rc" -eq 0 ] || fail "reference.py skipped with exit $rc"
  exit 0
fi
[ "$rc" -eq 0 ] || fail "DeepSpeed and zerotrain differ (or a run failed); traces in $OUT"
printf '%s\n' "$out" | grep -q "^deepspeed reference: ${#VARIANTS[@]} variants, ${#VARIANTS[@]} match" ||
  fail "not every variant matched"
echo "PASS deepspeed_reference"
