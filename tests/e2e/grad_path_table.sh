# docs/zero.md's gradient-path table is generated from the registry
# (zero/schedule/grad_path_registry.h) by `zerotrain config-reference --grad-paths`: the page must
# hold exactly what the command prints, and the command must list every key
# the engines report. About 1 s.
. "$(dirname "$0")/../support/e2e_lib.sh"
page=docs/zero.md
"$ZT_BIN" config-reference --grad-paths >"$WORK/table.md" || fail "config-reference --grad-paths exited $?"
sed -n '/<!-- grad-paths:begin -->/,/<!-- grad-paths:end -->/p' "$page" | sed '1d;$d' >"$WORK/page.md"
[ -s "$WORK/page.md" ] || fail "$page has no grad-paths block"
diff -u "$WORK/page.md" "$WORK/table.md" ||
  fail "$page's gradient-path table is stale; regenerate it with: scripts/update_grad_path_table.sh"
for key in allreduce allreduce_fallback multi_rank_allreduce per_owner_reduce reduce_scatter; do
  grep -q "| \`$key\`" "$WORK/table.md" || fail "the table lacks path '$key'"
done
[ "$(grep -c "(DeepSpeed's default)" "$WORK/table.md")" = 3 ] ||
  fail "expected one DeepSpeed default row each for stage 0, stages 1-2 and stage 3"
echo "PASS grad_path_table"
