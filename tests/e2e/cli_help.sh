# The generated usage: `zerotrain` alone, `zerotrain --help` and every
# command's --help; a bad option answers with the command's usage line.
. "$(dirname "$0")/../support/e2e_lib.sh"
overview=$("$ZT_BIN" 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] || fail "zerotrain alone: exit $rc (expected 2)"
printf '%s\n' "$overview" | head -1 | grep -q '^usage: zerotrain COMMAND' || fail "no overview: $overview"
[ "$("$ZT_BIN" --help)" = "$overview" ] || fail "zerotrain --help differs from the overview"

# The overview lists each command as "  NAME: summary" and then its usage.
commands=$(printf '%s\n' "$overview" | sed -n 's/^  \([a-z-]*\): .*/\1/p')
[ "$(printf '%s\n' "$commands" | wc -l)" -ge 11 ] || fail "too few commands: $commands"
for cmd in $commands; do
  help=$("$ZT_BIN" "$cmd" --help) || fail "$cmd --help: exit $?"
  [ "$("$ZT_BIN" "$cmd" -h)" = "$help" ] || fail "$cmd -h differs from $cmd --help"
  printf '%s\n' "$help" | head -1 | grep -q "^usage: zerotrain $cmd" || fail "$cmd --help: $help"
  usage=$(printf '%s\n' "$overview" | sed -n "/^  $cmd: /,/^\$/p")
  for opt in $(printf '%s\n' "$usage" | grep -o -- '--[a-z-]*' | sort -u); do
    printf '%s\n' "$help" | grep -q -- "^  $opt\b" || fail "$cmd --help does not describe $opt"
  done
done

# Options the hand-written usage once left out.
for pair in "eval --hellaswag" "eval --limit" "plan --ranks-per-node" "plan --calls" \
  "plan --network" "report --network"; do
  set -- $pair
  "$ZT_BIN" "$1" --help | grep -q -- "^  $2 " || fail "$1 --help lacks $2"
done

# --help wins over everything else, and is not mistaken inside an option's value.
"$ZT_BIN" train no-such.yaml --resume --help >/dev/null || fail "train ... --help: exit $?"
out=$("$ZT_BIN" report "$WORK/none" --out --help 2>&1); rc=$?
[ "$rc" -eq 2 ] || fail "report --out --help: exit $rc (expected 2, a report of a missing dir): $out"

out=$("$ZT_BIN" report "$WORK" --bogus 2>&1); rc=$?
[ "$rc" -eq 2 ] || fail "unknown option: exit $rc"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "unknown option: not one line: $out"
# The usage of --help's first paragraph (wrapped there), as one line.
usage=$("$ZT_BIN" report --help | sed '/^$/q' | sed 's/^ *//' | paste -sd' ' | sed 's/ *$//')
[ "$out" = "zerotrain: report: unknown option '--bogus'; $usage" ] ||
  fail "unknown option message: $out"

out=$("$ZT_BIN" frobnicate 2>&1); rc=$?
[ "$rc" -eq 2 ] || fail "unknown command: exit $rc"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && printf '%s' "$out" | grep -q "unknown command 'frobnicate'" ||
  fail "unknown command message: $out"
echo "PASS cli_help"
