#!/usr/bin/env bash
# End to end on emulated clusters (scripts/cluster.sh) with 20 Mbit/s links,
# under a prefix of its own (zte2e-):
# - the one-line errors: not root, a missing tool, bad values (exit 2);
# - `up` twice in a row; every namespace without a default route or
#   forwarding, addresses only in 198.18.0.0/24, tbf on both ends of every link;
# - stage 2 at W = 4 on 2 nodes x 2 ranks gives the losses of a plain `mpirun -np 4`
#   run bit for bit (both with the cluster's collective algorithms);
# - on 4 nodes x 1 rank at 20 Mbit/s with Open MPI's own collective choices
#   (issue 9's setting), DeepSpeed's default path (multi_rank_allreduce) is
#   at least 1.5x slower per step than the per-owner reduces (about 3x
#   measured); with cluster.sh's choices the ratio is printed;
# - a `run` killed with SIGKILL leaves its processes behind until `down`,
#   which removes them with everything else; a one-run cluster (`run
#   --nodes ...`) is gone after it ends, after an error and after Ctrl-C;
# - afterwards no namespace of the prefix is left (links and qdiscs live in
#   them), and the root namespace has the addresses, routes, links and qdiscs
#   it had before.
# Without root, network namespaces or tc's tbf it prints a SKIPPED line and passes.
here=$(cd "$(dirname "$0")/../.." && pwd)
source "$here/tests/support/e2e_lib.sh"
cd "$here" || fail "cannot enter the repository root"
P=zte2e-
C=(scripts/cluster.sh --prefix "$P")
NODES=2 G=2 W=4

cluster_test_or_skip cluster_e2e "$P"
# What a killed run left behind goes first.
"${C[@]}" down >/dev/null 2>&1

# What the root namespace holds before: nothing of the cluster may change it.
root_state() {
  ip -o addr show | awk '{print $2, $3, $4}'
  ip route show table all
  ip -o link show | awk -F': ' '{print $2}'
  tc qdisc show
}
root_before=$(root_state)
cleanup() {
  "${C[@]}" down >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
no_namespaces_left() { [ -z "$(ip netns list | grep "^$P")" ]; }

expect_error() {  # expected message part, then the command
  local part=$1 out rc
  shift
  out=$("$@" 2>&1)
  rc=$?
  [ "$rc" = 2 ] || fail "'$*' exited $rc, expected 2: $out"
  [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "'$*' printed more than one line: $out"
  [[ "$out" == *"$part"* ]] || fail "'$*' said '$out', expected '$part'"
}
expect_error "needs root" setpriv --reuid=65534 --regid=65534 --clear-groups "${C[@]}" up \
  --nodes 2 --ranks-per-node 1 --link 1gbit
mkdir -p "$WORK/bin"
ln -s "$(command -v id)" "$WORK/bin/id"
ln -s "$(command -v ip)" "$WORK/bin/ip"
expect_error "needs 'tc'" env PATH="$WORK/bin" /bin/bash scripts/cluster.sh --prefix "$P" up \
  --nodes 2 --ranks-per-node 1 --link 1gbit
expect_error "--nodes: expected 1..250, got '0'" "${C[@]}" up --nodes 0 --ranks-per-node 1 --link 1gbit
expect_error "expected a number with kbit, mbit or gbit" "${C[@]}" up --nodes 2 --ranks-per-node 1 \
  --link 50mbps
expect_error "no cluster with prefix $P is up" "${C[@]}" run -- hostname

# ---- up, twice in a row.
"${C[@]}" up --nodes $NODES --ranks-per-node $G --link 20mbit >"$WORK/up1.log" 2>&1 ||
  fail "up: $(cat "$WORK/up1.log")"
"${C[@]}" up --nodes $NODES --ranks-per-node $G --link 20mbit >"$WORK/up2.log" 2>&1 ||
  fail "second up: $(cat "$WORK/up2.log")"
grep -q "already there" "$WORK/up2.log" || fail "the second up did not replace the first: $(cat "$WORK/up2.log")"
"${C[@]}" status >"$WORK/status.log" 2>&1 || fail "status: $(cat "$WORK/status.log")"
namespaces=$(ip netns list | awk '{print $1}' | grep "^$P" | sort | tr '\n' ' ')
[ "$namespaces" = "${P}n0 ${P}n1 ${P}sw " ] || fail "namespaces after up: '$namespaces'"
for ns in ${P}n0 ${P}n1 ${P}sw; do
  [ -z "$(ip -n "$ns" route show default)" ] || fail "$ns has a default route"
  [ "$(ip netns exec "$ns" sysctl -n net.ipv4.ip_forward)" = 0 ] || fail "$ns forwards"
  ip -n "$ns" -o -4 addr show | awk '{print $4}' | grep -vE '^(127\.0\.0\.1/8|198\.18\.0\.[0-9]+/24)$' &&
    fail "$ns has an address outside 198.18.0.0/24"
done
for link in "${P}n0 ${P}eth" "${P}n1 ${P}eth" "${P}sw ${P}p0" "${P}sw ${P}p1"; do
  read -r ns dev <<<"$link"
  tc -n "$ns" qdisc show dev "$dev" | grep -q "qdisc tbf .* rate 20Mbit" || fail "$ns/$dev is not shaped"
done
state_env=$("${C[@]}" env) || fail "env: no environment file"
cluster_json=${state_env%env}cluster.json
grep -q "\"nodes\": $NODES, \"ranks_per_node\": $G" "$cluster_json" || fail "cluster.json: $(cat "$cluster_json")"

# ---- Stage 2 at W = 4 on the cluster and without it: the same losses, bit for bit.
# The plain run uses the cluster's collective algorithms (its OMPI_MCA_coll_*
# settings): the network may change the time, never the sums.
# Short micro-steps (1 x 32 tokens, 3 per step at W = 4) keep compute small
# next to the gradient traffic, which stage 2 sends every micro-step.
train_args=("${SMALL[@]}" --set model.seq_len=32 --set train.micro_batch=1
  --set train.global_batch_tokens=384 --set zero.stage=2 --set train.steps=4)
"${C[@]}" run -- "$ZT_BIN" train configs/tiny.yaml "${train_args[@]}" --run-dir "$WORK/ds" \
  >"$WORK/ds.log" 2>&1 || fail "training on the cluster: $(run_failure "$WORK/ds.log")"
read -ra coll_env <<<"$(grep -o 'OMPI_MCA_coll[a-z_]*=[^ ]*' "$state_env" | tr '\n' ' ')"
env "${coll_env[@]}" mpirun -np $W "$ZT_BIN" train configs/tiny.yaml "${train_args[@]}" \
  --run-dir "$WORK/plain" >"$WORK/plain.log" 2>&1 || fail "plain run: $(run_failure "$WORK/plain.log")"
[ "$(losses "$WORK/ds/metrics.jsonl" | wc -l)" = 4 ] || fail "the cluster run did not log 4 losses"
[ "$(losses "$WORK/ds/metrics.jsonl")" = "$(losses "$WORK/plain/metrics.jsonl")" ] ||
  fail "losses differ: cluster $(losses "$WORK/ds/metrics.jsonl" | tr '\n' ' '), plain $(losses "$WORK/plain/metrics.jsonl" | tr '\n' ' ')"
grep -q 'all-reduce of packed owner slices (DeepSpeed default)' "$WORK/ds.log" ||
  fail "the cluster run did not take DeepSpeed's default path"
grep -q '"world_size":4' "$WORK/ds/summary.json" || fail "summary.json: world_size is not 4"
# Node-aware accounting: the inter-node bytes the run counted (per primitive,
# per step, the mean over the ranks) equal the plan's for this node layout.
plan_out=$("$ZT_BIN" plan configs/tiny.yaml "${train_args[@]}" --world $W --ranks-per-node $G) ||
  fail "plan: $plan_out"
check=$(/usr/bin/python3 tests/e2e/inter_node_bytes.py "$WORK/ds/summary.json" <<<"$plan_out" 2>&1) ||
  fail "inter-node bytes differ from the plan's: $check"
[ -n "$check" ] || fail "no inter-node bytes compared"
echo "inter-node bus bytes per step equal the plan's on $NODES x $G: $(echo $check)"

# ---- The slow link, on 4 nodes x 1 rank: DeepSpeed's default against the
# per-owner reduces, each path's fastest step after the first (which also
# sets up the connections): other jobs and stalled calls only ever add time.
# With Open MPI's own collective choices, as issue 9 measured, the all-reduce
# is a binomial reduce plus broadcast at about 30% of the link, and DeepSpeed's
# default is about 3x slower; asserted >= 1.5. With cluster.sh's choices
# (Rabenseifner's all-reduce, 1.5x the gradient per link per micro-step
# against about 1x for the four concurrent chain reduces) the gap is at most
# 1.5x in communication and about 1.2-1.4x per step here: printed, not
# asserted. On 2 x 2 the chains cross between the nodes up to three times
# each and both paths put about the gradient on a node's link.
"${C[@]}" up --nodes 4 --ranks-per-node 1 --link 20mbit >"$WORK/up3.log" 2>&1 ||
  fail "up 4 x 1: $(cat "$WORK/up3.log")"
libnbc_own=(--mca coll_libnbc_iallreduce_algorithm 0 --mca coll_libnbc_ireduce_algorithm 0)
step_ms() { grep -o '"ms":[0-9.eE+-]*' "$1/metrics.jsonl" | cut -d: -f2 | tail -n +2; }
fastest() { step_ms "$1" | sort -g | head -1; }
ratios=()
for collectives in libnbc cluster; do
  for path in ds po; do
    mca=()
    [ "$collectives" = libnbc ] && mca=("${libnbc_own[@]}")
    extra=()
    [ "$path" = po ] && extra=(--set zero.use_multi_rank_bucket_allreduce=false)
    dir="$WORK/flat_${collectives}_$path"
    "${C[@]}" run -- "${mca[@]}" "$ZT_BIN" train configs/tiny.yaml "${train_args[@]}" "${extra[@]}" \
      --run-dir "$dir" >"$dir.log" 2>&1 || fail "$path on 4 x 1: $(run_failure "$dir.log")"
  done
  grep -q 'one rooted reduce per owner slice' "$WORK/flat_${collectives}_po.log" ||
    fail "the per-owner run took another path"
  ds_ms=$(fastest "$WORK/flat_${collectives}_ds")
  po_ms=$(fastest "$WORK/flat_${collectives}_po")
  ratio=$(awk -v a="$ds_ms" -v b="$po_ms" 'BEGIN { printf "%.2f", a / b }')
  ratios+=("$ratio")
  echo "fastest step on 4 x 1 at 20 Mbit/s, $collectives's collectives: DeepSpeed default $ds_ms ms, per-owner reduces $po_ms ms, ratio $ratio (load $(cut -d' ' -f1 /proc/loadavg))"
  echo "  steps 2.., DeepSpeed default: $(step_ms "$WORK/flat_${collectives}_ds" | tr '\n' ' ')ms; per-owner: $(step_ms "$WORK/flat_${collectives}_po" | tr '\n' ' ')ms"
done
# The four ranks share this machine's cores, although each is alone on its
# node: one BLAS thread per rank below 8 cores, never a node's worth each.
want_threads=$(($(nproc) / 4))
[ "$want_threads" -ge 1 ] || want_threads=1
sharing=$(/usr/bin/python3 -c 'import json, sys; h = json.load(open(sys.argv[1]))["host_sharing"]; print(h["ranks_on_machine"], h["cores"], h["blas_threads_per_rank"], h["mpi_waits"])' \
  "$WORK/flat_cluster_ds/summary.json") || fail "summary.json lacks host_sharing"
[ "$sharing" = "4 $(nproc) $want_threads $([ "$(nproc)" -lt 4 ] && echo sleep || echo spin)" ] ||
  fail "host_sharing on 4 x 1 with $(nproc) cores: got '$sharing' (ranks, cores, BLAS threads, waits)"
echo "4 x 1 on $(nproc) cores: ranks, cores, BLAS threads per rank, MPI waits: $sharing"
awk -v r="${ratios[0]}" 'BEGIN { exit !(r >= 1.5) }' ||
  fail "with Open MPI's own collectives DeepSpeed's default is only ${ratios[0]}x the per-owner path's step time (expected about 3, asserted >= 1.5)"

# ---- A run killed with SIGKILL: its ranks live on in the namespaces until down.
"${C[@]}" run -- "$ZT_BIN" train configs/tiny.yaml "${train_args[@]}" \
  --set train.steps=100000 --run-dir "$WORK/killed" >"$WORK/killed.log" 2>&1 &
run_pid=$!
for _ in $(seq 1 300); do
  [ -s "$WORK/killed/metrics.jsonl" ] && break
  sleep 0.1
done
[ -s "$WORK/killed/metrics.jsonl" ] || fail "the run to kill never trained: $(run_failure "$WORK/killed.log")"
kill -KILL "$run_pid"
wait "$run_pid" 2>/dev/null
left=$(for ns in ${P}n0 ${P}n1 ${P}n2 ${P}n3; do ip netns pids "$ns"; done | wc -l)
[ "$left" -gt 0 ] || fail "nothing was left running after SIGKILL (the test would prove nothing)"
"${C[@]}" down >"$WORK/down.log" 2>&1 || fail "down: $(cat "$WORK/down.log")"
no_namespaces_left || fail "namespaces left after down: $(ip netns list | grep "^$P")"
"${C[@]}" down 2>&1 | grep -q "nothing to remove" || fail "a second down did not say there was nothing to remove"

# ---- One-run clusters: gone after success, failure and Ctrl-C.
one_run=("${C[@]}" run --nodes 2 --ranks-per-node 1 --link 1gbit --)
"${one_run[@]}" hostname >"$WORK/once.log" 2>&1 || fail "one-run cluster: $(cat "$WORK/once.log")"
[ "$(grep -c "^${P}n[01]$" "$WORK/once.log")" = 2 ] ||
  fail "the nodes did not run under their own hostnames: $(cat "$WORK/once.log")"
no_namespaces_left || fail "a one-run cluster was left up"
"${one_run[@]}" false >"$WORK/false.log" 2>&1 && fail "a failing run exited 0"
no_namespaces_left || fail "a failed one-run cluster was left up"
# Job control on: a background job that ignored SIGINT could not trap it.
set -m
"${one_run[@]}" sleep 60 >"$WORK/int.log" 2>&1 &
run_pid=$!
set +m
for _ in $(seq 1 100); do
  [ -n "$(ip netns pids "${P}n1" 2>/dev/null)" ] && break
  sleep 0.1
done
kill -INT "$run_pid"
wait "$run_pid"
rc=$?
[ "$rc" = 130 ] || fail "Ctrl-C: run exited $rc, expected 130: $(cat "$WORK/int.log")"
no_namespaces_left || fail "an interrupted one-run cluster was left up"

# ---- The root namespace as it was.
[ "$(root_state)" = "$root_before" ] ||
  fail "the root namespace changed: $(diff <(echo "$root_before") <(root_state) | head -5)"
echo "PASS cluster_e2e ($SECONDS s)"
