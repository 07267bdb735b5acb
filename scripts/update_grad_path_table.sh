#!/usr/bin/env bash
# Rewrites docs/zero.md's gradient-path table (between the grad-paths markers)
# from `zerotrain config-reference --grad-paths`, the registry's own rows.
set -euo pipefail
bin=${ZT_BIN:-build/zerotrain}
page=docs/zero.md
table=$(mktemp)
out=$(mktemp)
trap 'rm -f "$table" "$out"' EXIT
"$bin" config-reference --grad-paths >"$table"
awk -v table="$table" '
  /<!-- grad-paths:begin -->/ {print; while ((getline line < table) > 0) print line; skip = 1; next}
  /<!-- grad-paths:end -->/ {skip = 0}
  !skip {print}' "$page" >"$out"
grep -q '<!-- grad-paths:end -->' "$out" || { echo "update_grad_path_table: $page lacks the markers" >&2; exit 1; }
cat "$out" >"$page"
echo "updated $page"
