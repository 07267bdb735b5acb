#!/usr/bin/env bash
# ZeRO++ on an emulated 2 nodes x 2 ranks cluster (scripts/cluster.sh, 200
# Mbit/s links, prefix zte2z-), stage 3 on the small model, 5 steps each:
# plain, hpZ (zero_hpz_partition_size 2), qwZ, qgZ, and all three.
# - every run's inter-node bus bytes per primitive equal `plan`'s for 2 x 2;
# - hpZ: losses bit-equal to plain stage 3; no backward parameter all-gather
#   runs over the world (comm trace: every one has group [2,1]);
# - qwZ: the parameter all-gathers move int8 codes plus fp32 scales;
# - qgZ: gradients move in all-to-alls over the node and across nodes;
# - the quantized runs' losses stay within 2% of plain stage 3 at every step;
# - then on 2 x 4 with T = 2 (tensor innermost), qgZ's all-to-alls inside and
#   across the nodes over each data-parallel group, losses within 2% too.
# Without root, network namespaces or tc's tbf it prints a SKIPPED line and passes.
here=$(cd "$(dirname "$0")/../.." && pwd)
source "$here/tests/support/e2e_lib.sh"
cd "$here" || fail "cannot enter the repository root"
P=zte2z-
C=(scripts/cluster.sh --prefix "$P")
cluster_test_or_skip zeropp_cluster "$P"
"${C[@]}" down >/dev/null 2>&1
trap '"${C[@]}" down >/dev/null 2>&1; rm -rf "$WORK"' EXIT

"${C[@]}" up --nodes 2 --ranks-per-node 2 --link 200mbit >"$WORK/up.log" 2>&1 ||
  fail "up: $(cat "$WORK/up.log")"
base=("${SMALL[@]}" --set zero.stage=3 --set train.steps=5 --set system.comm_trace=true
  --set zero.stage3_max_reuse_distance=0 --set zero.stage3_param_persistence_threshold=0)
declare -A extra=(
  [plain]=""
  [hpz]="--set zero.zero_hpz_partition_size=2"
  [qwz]="--set zero.zero_quantized_weights=true"
  [qgz]="--set zero.zero_quantized_gradients=true"
  [all]="--set zero.zero_hpz_partition_size=2 --set zero.zero_quantized_weights=true --set zero.zero_quantized_gradients=true"
)
for v in plain hpz qwz qgz all; do
  read -ra more <<<"${extra[$v]}"
  "${C[@]}" run -- "$ZT_BIN" train configs/tiny.yaml "${base[@]}" "${more[@]}" --run-dir "$WORK/$v" \
    >"$WORK/$v.log" 2>&1 || fail "$v on 2 x 2: $(run_failure "$WORK/$v.log")"
  [ "$(losses "$WORK/$v/metrics.jsonl" | wc -l)" = 5 ] || fail "$v did not log 5 losses"
  plan_out=$("$ZT_BIN" plan configs/tiny.yaml "${base[@]}" "${more[@]}" --world 4 --ranks-per-node 2) ||
    fail "plan $v: $plan_out"
  check=$(/usr/bin/python3 tests/e2e/inter_node_bytes.py "$WORK/$v/summary.json" <<<"$plan_out" 2>&1) ||
    fail "$v: inter-node bytes differ from the plan's: $check"
  echo "$v: inter-node bus bytes per step equal the plan's: $(echo $check)"
done

[ "$(losses "$WORK/hpz/metrics.jsonl")" = "$(losses "$WORK/plain/metrics.jsonl")" ] ||
  fail "hpZ changed the losses: $(losses "$WORK/hpz/metrics.jsonl" | tr '\n' ' ') vs $(losses "$WORK/plain/metrics.jsonl" | tr '\n' ' ')"
world_bwd=$(cat "$WORK"/hpz/comm_trace_rank*.jsonl | grep '"phase":"bwd"' | grep '"op":"all_gather"' |
  grep -vc '"group":\[2,1\]')
hpz_bwd=$(cat "$WORK"/hpz/comm_trace_rank*.jsonl | grep '"phase":"bwd"' | grep '"op":"all_gather"' |
  grep -c '"group":\[2,1\]')
[ "$hpz_bwd" -gt 0 ] || fail "hpZ: no backward all-gather inside the hpZ group (the check would prove nothing)"
[ "$world_bwd" = 0 ] || fail "hpZ: $world_bwd backward all-gathers ran over the world"
grep -q '"op":"all_gather","count":[0-9]*,"dtype":"int8"' "$WORK"/qwz/comm_trace_rank0.jsonl ||
  fail "qwZ: no int8 all-gather in the trace"
grep -q '"op":"all_to_all","count":[0-9]*,"dtype":"int8".*"group":\[2,2\]' "$WORK"/qgz/comm_trace_rank0.jsonl ||
  fail "qgZ: no int8 all-to-all across the nodes in the trace"
for v in qwz qgz all; do
  paste <(losses "$WORK/plain/metrics.jsonl") <(losses "$WORK/$v/metrics.jsonl") |
    awk -v v="$v" '{ d = ($2 - $1) / $1; if (d < 0) d = -d; if (d > 0.02) { print "step " NR ": " v " loss " $2 " vs plain " $1; bad = 1 } } END { exit bad }' ||
    fail "$v's losses are not within 2% of plain stage 3"
  echo "$v losses: $(losses "$WORK/$v/metrics.jsonl" | tr '\n' ' ')(plain: $(losses "$WORK/plain/metrics.jsonl" | tr '\n' ' '))"
done
"${C[@]}" down >/dev/null 2>&1 || fail "down failed"

# qgZ inside a tensor-parallel grid, across nodes: 2 nodes x 4 ranks with
# T = 2 innermost leave each data-parallel group of 4 two ranks per node, so
# qgZ's all-to-alls run inside the node and across it, over the group's
# ranks named in the world; the losses stay within 2% of plain stage 3's.
"${C[@]}" up --nodes 2 --ranks-per-node 4 --link 200mbit >"$WORK/up8.log" 2>&1 ||
  fail "up 2 x 4: $(cat "$WORK/up8.log")"
"${C[@]}" run -- "$ZT_BIN" train configs/tiny.yaml "${base[@]}" --set zero.zero_quantized_gradients=true \
  --set parallel.tensor=2 --run-dir "$WORK/qgz_grid" >"$WORK/qgz_grid.log" 2>&1 ||
  fail "qgZ with T = 2 on 2 x 4: $(run_failure "$WORK/qgz_grid.log")"
grep -q '"op":"all_to_all","count":[0-9]*,"dtype":"int8".*"group":\[2,2\],"dim":"data"' "$WORK"/qgz_grid/comm_trace_rank0.jsonl ||
  fail "qgZ in a grid: no int8 all-to-all inside the node (ranks 0 and 2)"
grep -q '"op":"all_to_all","count":[0-9]*,"dtype":"int8".*"group":\[2,4\],"dim":"data"' "$WORK"/qgz_grid/comm_trace_rank0.jsonl ||
  fail "qgZ in a grid: no int8 all-to-all across the nodes (ranks 0 and 4)"
paste <(losses "$WORK/plain/metrics.jsonl") <(losses "$WORK/qgz_grid/metrics.jsonl") |
  awk '{ d = ($2 - $1) / $1; if (d < 0) d = -d; if (d > 0.02) { print "step " NR ": qgZ in a grid " $2 " vs plain " $1; bad = 1 } } END { exit bad }' ||
  fail "qgZ in a grid: losses not within 2% of plain stage 3"
echo "qgZ with T = 2 on 2 x 4 losses: $(losses "$WORK/qgz_grid/metrics.jsonl" | tr '\n' ' ')"
"${C[@]}" down >/dev/null 2>&1 || fail "down failed"
[ -z "$(ip netns list | grep "^$P")" ] || fail "namespaces left after down"
echo "PASS zeropp_cluster"
