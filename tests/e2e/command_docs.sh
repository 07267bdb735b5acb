# Every registered command has a docs page whose synopsis is its generated
# `--help` (scripts/update_command_docs.sh writes them) and a line in README's
# command table, so that no page or README line drifts from the registry.
. "$(dirname "$0")/../support/e2e_lib.sh"
commands=$("$ZT_BIN" --help | sed -n 's/^  \([a-z-]*\): .*/\1/p')
[ -n "$commands" ] || fail "no commands in the overview"
for cmd in $commands; do
  page=docs/commands/$cmd.md
  [ -f "$page" ] || fail "$page is missing (every command has a page)"
  "$ZT_BIN" "$cmd" --help >"$WORK/help.txt" || fail "$cmd --help: exit $?"
  awk '/^```/ {n++; next} n == 1 {print} n >= 2 {exit}' "$page" >"$WORK/page.txt"
  diff -u "$WORK/page.txt" "$WORK/help.txt" ||
    fail "$page's synopsis differs from '$cmd --help'; regenerate with: scripts/update_command_docs.sh"
  grep -q "^| \[\`$cmd\`\](docs/commands/$cmd.md) |" README.md || fail "README's command table lacks a linked line for $cmd"
done
echo "PASS command_docs"
