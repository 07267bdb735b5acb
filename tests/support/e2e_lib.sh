# Shared helpers for the end-to-end scripts (sourced, not run).
set -u
ZT_BIN=${ZT_BIN:-build/zerotrain}
ZT_DATA_DIR=${ZT_DATA_DIR:-build/data/kjv}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# A small, fast model on the default corpus.
SMALL=(--set "data.train=$ZT_DATA_DIR/train_*.bin" --set "data.val=$ZT_DATA_DIR/val_*.bin"
       --set data.tokenizer=byte --set model.vocab_size=256
       --set model.n_layer=2 --set model.n_embd=64 --set model.seq_len=64
       --set train.micro_batch=2 --set train.global_batch_tokens=1536
       --set train.eval_every=0 --set train.sample_every=0 --set train.checkpoint_every=0)
fail() { echo "FAIL: $*"; exit 1; }
# A command that must refuse its input: exit 2 within EXPECT_TIMEOUT seconds
# (a hang fails), one line holding the expected text, no library wording.
EXPECT_TIMEOUT=300
expect_error_count=0
expect_error() {  # what expected-text command...
  local what=$1 want=$2 out rc
  shift 2
  out=$(timeout "$EXPECT_TIMEOUT" "$@" 2>&1 >/dev/null); rc=$?
  [ "$rc" -ne 124 ] || fail "$what: hung (killed after $EXPECT_TIMEOUT s)"
  [ "$rc" -eq 2 ] || fail "$what: exit $rc (expected 2): $out"
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "$what: not one line: $out"
  printf '%s' "$out" | grep -qF -- "$want" || fail "$what: '$out' lacks '$want'"
  printf '%s' "$out" | grep -qiE 'std::|yaml-cpp|basic_filebuf|terminate' && fail "$what: internals leak: $out"
  expect_error_count=$((expect_error_count + 1))
}
# A cluster description (what ZT_CLUSTER names) of 1 node x 2 ranks and a
# 100 Mbit/s link, written to $1, for runs on plain mpirun.
write_one_node_cluster() {
  cat >"$1" <<'JSON'
{"prefix": "zt-", "nodes": 1, "ranks_per_node": 2, "world": 2,
 "link": {"spec": "100mbit", "rate_bits_per_s": 100000000, "delay_us": null, "jitter_us": null}}
JSON
}
# Why a run failed, from its log: the ranks' own error lines (the first five
# that start "zerotrain:") and the log's last three lines, on one line.
run_failure() { { grep -m5 '^zerotrain:' "$1"; tail -3 "$1"; } | tr '\n' ' '; }
# The losses of metrics.jsonl, one per line, exactly as written.
losses() { grep -o '"loss":[^,]*' "$1" | cut -d: -f2; }
# The pid of rank $2 of the local job training into run dir $1 (by its
# command line and Open MPI's rank variable).
rank_pid() {
  local p
  for p in /proc/[0-9]*; do
    tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -qF -- "--run-dir $1 " || continue
    tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qx "OMPI_COMM_WORLD_RANK=$2" && {
      basename "$p"
      return
    }
  done
}
# Emulated-cluster tests (scripts/cluster.sh): prints "SKIPPED NAME: why" and
# exits 0 without root, the tools, network namespaces or tc's tbf; then takes
# the machine-wide cluster lock (one cluster test at a time, every checkout)
# on fd 7, waiting up to 10 minutes.
cluster_test_or_skip() {
  local name=$1 probe=${2}probe t tbf_ok
  skip() {
    echo "SKIPPED $name: $*"
    exit 0
  }
  [ "$(id -u)" = 0 ] || skip "needs root (network namespaces and tc)"
  for t in ip tc unshare flock setpriv; do command -v "$t" >/dev/null || skip "needs '$t' (iproute2, util-linux)"; done
  ip netns add "$probe" 2>/dev/null || skip "network namespaces are not available here"
  tc -n "$probe" qdisc add dev lo root tbf rate 1mbit burst 64kb latency 100ms 2>/dev/null
  tbf_ok=$?
  ip netns del "$probe"
  [ "$tbf_ok" = 0 ] || skip "tc's tbf qdisc is not available in this kernel"
  mkdir -p /run/zerotrain && exec 7>/run/zerotrain/.cluster_e2e.lock
  flock -w 600 7 || fail "another cluster test has held /run/zerotrain/.cluster_e2e.lock for 10 minutes"
}
# `train` on RANKS ranks with the small model and ARGS must refuse to run,
# printing EXPECTED-TEXT (a grep pattern) and writing no summary.
train_refused() {  # EXPECTED-TEXT RANKS ARGS...
  local want=$1 ranks=$2
  shift 2
  mpirun -np "$ranks" "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/bad" "${SMALL[@]}" "$@" \
    >"$WORK/bad.txt" 2>&1 && fail "accepted: $*"
  grep -q -- "$want" "$WORK/bad.txt" || { cat "$WORK/bad.txt"; fail "$*: expected '$want'"; }
  [ ! -e "$WORK/bad/summary.json" ] || fail "$*: a summary was written"
}
