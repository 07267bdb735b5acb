# Bad input from the command line: one line naming the problem, exit 2, no run.
. "$(dirname "$0")/../support/e2e_lib.sh"
out=$("$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/r" --set zero.stagee=2 2>&1); rc=$?
[ "$rc" -eq 2 ] || fail "misspelled key: exit $rc"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "misspelled key: not one line: $out"
printf '%s' "$out" | grep -q "zero.stagee" && printf '%s' "$out" | grep -q "did you mean 'stage'" ||
  fail "misspelled key message: $out"
[ ! -e "$WORK/r" ] || fail "a run directory was created for a bad config"

# One token out of range in a shard: the file and the position are named.
/usr/bin/python3 - "$WORK/bad.bin" <<'PY'
import struct, sys
header = [20240520, 1, 10000] + [0] * 253
tokens = [65 + i % 26 for i in range(10000)]
tokens[777] = 512  # out of range for the byte vocabulary
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<256i", *header) + struct.pack("<10000H", *tokens))
PY
out=$("$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/r" "${SMALL[@]}" --set "data.train=$WORK/bad.bin" 2>&1); rc=$?
[ "$rc" -eq 2 ] || fail "bad token: exit $rc: $out"
printf '%s' "$out" | grep -q "bad.bin" && printf '%s' "$out" | grep -q "777" || fail "bad token message: $out"

out=$("$ZT_BIN" frobnicate 2>&1); [ $? -eq 2 ] || fail "unknown command should exit 2"
out=$("$ZT_BIN" plan configs/tiny.yaml --world 0 2>&1); [ $? -eq 2 ] || fail "plan --world 0 should exit 2"
echo "PASS cli_errors"
