#!/usr/bin/env bash
# Rewrites the first fenced block of each docs/commands/NAME.md with
# `zerotrain NAME --help`, generated from the command registry, so that the
# pages cannot drift from what the commands accept. tests/e2e/command_docs.sh
# fails when a page is stale.
set -euo pipefail
bin=${ZT_BIN:-build/zerotrain}
commands=$("$bin" --help | sed -n 's/^  \([a-z-]*\): .*/\1/p')
for cmd in $commands; do
  page=docs/commands/$cmd.md
  [ -f "$page" ] || { echo "update_command_docs: $page is missing" >&2; exit 1; }
  help=$(mktemp)
  out=$(mktemp)
  "$bin" "$cmd" --help >"$help"
  awk -v help="$help" '
    !done && /^```/ {
      if (!open) { open = 1; print; while ((getline line < help) > 0) print line; next }
      open = 0; done = 1
    }
    !open {print}' "$page" >"$out"
  cat "$out" >"$page"
  rm -f "$help" "$out"
done
echo "updated docs/commands/ for: $(echo $commands)"
