# docs/config.md is `zerotrain config-reference`'s output, and it names every
# key the config loader accepts (each key of the effective config train prints).
. "$(dirname "$0")/../support/e2e_lib.sh"
"$ZT_BIN" config-reference >"$WORK/config.md" || fail "config-reference: exit $?"
diff -u docs/config.md "$WORK/config.md" >"$WORK/diff" ||
  fail "docs/config.md is stale; regenerate it with: $ZT_BIN config-reference > docs/config.md
$(head -20 "$WORK/diff")"

# Every key config.cpp accepts, as the loader itself writes them: a run's
# RUN/config.yaml (sections at the left margin, their keys indented by two).
out=$(timeout 300 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/run" "${SMALL[@]}" \
  --set train.steps=1 2>&1) || fail "train: $(printf '%s' "$out" | tail -2)"
keys=$(awk '/^[a-z_]+:$/ { section = substr($1, 1, length($1) - 1) }
  /^  [a-z_0-9.]+: / { print section "." substr($1, 1, length($1) - 1) }' "$WORK/run/config.yaml")
[ "$(printf '%s\n' "$keys" | wc -l)" -ge 60 ] || fail "too few keys in RUN/config.yaml: $keys"
for key in $keys; do
  grep -qF "| \`$key\` |" docs/config.md || fail "docs/config.md lacks $key"
done
echo "PASS config_reference"
