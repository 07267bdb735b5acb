#!/usr/bin/env bash
# An emulated multi-node cluster on one Linux machine: N network namespaces
# ("nodes"), each with one veth link into a bridge that lives in a further
# namespace (the "switch"); both directions of every link shaped with tc (tbf
# for the rate, netem for delay and jitter). Open MPI runs across it exactly as
# across hosts: mpirun starts inside node 0, one orted per node through an rsh
# agent, shared memory (vader) inside a node and TCP between nodes.
#
#   scripts/cluster.sh up --nodes N --ranks-per-node G --link RATE[,DELAY[,JITTER]]
#   scripts/cluster.sh down
#   scripts/cluster.sh status
#   scripts/cluster.sh kill-node [--signal SIG] [--keep-store] I[,J...]
#   scripts/cluster.sh run [--timeout S] [--nodes N --ranks-per-node G --link L] -- ARGS...
#   scripts/cluster.sh launcher    # the path of the mpirun wrapper, for your own commands
#   scripts/cluster.sh env         # the environment file (ZT_CLUSTER and the MCA settings)
#
# kill-node: an emulated node failure: SIG (default KILL; STOP emulates a hang)
# to every process in node I's namespace (its ranks and its orted; node 0 also
# runs mpirun), and, unless --keep-store, the node's snapshot store is removed
# with it, as a lost machine's memory would be. The namespace and its link stay,
# so a relaunch on the same hostfile gets a replacement node with an empty store.
# down also removes every snapshot store of the cluster's nodes.
#
# RATE: a number with kbit, mbit or gbit (bits per second, as tc reads them).
# DELAY: one-way latency between two nodes, with us, ms or s (half of it on
# each end of the path); JITTER likewise (netem reorders packets with jitter).
# run: mpirun with ARGS on the cluster that is up (-np defaults to N x G), at
# most S seconds (default 1800); with --nodes/--ranks-per-node/--link it brings
# up a cluster for this run alone and tears it down on every exit. Either way
# every process it started in the cluster is gone when it returns. Its exit
# status is mpirun's (124 after a timeout).
#
# Options of every command: --prefix P (default zt-, or $ZT_CLUSTER_PREFIX):
# every namespace and link name starts with P, so clusters with different
# prefixes coexist and nothing else is touched. State (cluster.json, hostfile,
# rsh agent, mpirun wrapper, env file) lives in /run/zerotrain/cluster-P/
# ($ZT_CLUSTER_STATE_ROOT replaces /run/zerotrain).
#
# Safety: addresses (198.18.0.0/24, from the benchmarking range) exist only in
# the namespaces made here, none in the root namespace; no default route, no
# forwarding, no NAT, so no packet can leave the machine. Needs root, ip (with
# netns), tc, unshare, timeout and flock; without them it prints one line and
# exits 2.
set -u

die() {  # usage, config or environment error: one line, exit 2
  echo "cluster.sh: $*" >&2
  exit 2
}
note() { echo "cluster.sh: $*" >&2; }
usage() {
  sed -n '2,/^set -u$/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
  exit 2
}

SUBNET=198.18.0.0/24
prefix=${ZT_CLUSTER_PREFIX:-zt-}
state_root=${ZT_CLUSTER_STATE_ROOT:-/run/zerotrain}

# ---- Argument parsing: the command, then its options; --prefix anywhere before "--".
cmd=""
nodes="" rpn="" link="" run_timeout=1800
kill_signal=KILL keep_store=0 kill_targets=""
run_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || die "--prefix needs a value"; prefix=$2; shift 2 ;;
    --nodes) [ $# -ge 2 ] || die "--nodes needs a value"; nodes=$2; shift 2 ;;
    --ranks-per-node) [ $# -ge 2 ] || die "--ranks-per-node needs a value"; rpn=$2; shift 2 ;;
    --link) [ $# -ge 2 ] || die "--link needs a value"; link=$2; shift 2 ;;
    --timeout) [ $# -ge 2 ] || die "--timeout needs a value"; run_timeout=$2; shift 2 ;;
    --signal) [ $# -ge 2 ] || die "--signal needs a value"; kill_signal=$2; shift 2 ;;
    --keep-store) keep_store=1; shift ;;
    --) shift; run_args=("$@"); break ;;
    -h | --help | help) usage ;;
    -*) die "unknown option '$1' (--help lists them)" ;;
    *)
      if [ "$cmd" = kill-node ] && [ -z "$kill_targets" ]; then
        kill_targets=$1
        shift
        continue
      fi
      [ -z "$cmd" ] || die "unexpected argument '$1' (mpirun's arguments go after --)"
      cmd=$1
      shift ;;
  esac
done
[ -n "$cmd" ] || usage
case "$cmd" in up | down | status | run | launcher | env | kill-node) ;; *) die "unknown command '$cmd' (up, down, status, run, launcher, env, kill-node)" ;; esac
[[ "$prefix" =~ ^[a-z][a-z0-9]{0,5}-$ ]] ||
  die "--prefix '$prefix': expected 1-6 lowercase letters or digits and a final '-' (e.g. zt-)"
if [ "$cmd" != run ] && [ ${#run_args[@]} -gt 0 ]; then die "$cmd takes no arguments after --"; fi
if [ "$cmd" != up ] && [ "$cmd" != run ] && [ -n "$nodes$rpn$link" ]; then
  die "$cmd takes no --nodes, --ranks-per-node or --link"
fi
[[ "$run_timeout" =~ ^[1-9][0-9]*$ ]] || die "--timeout: expected whole seconds > 0, got '$run_timeout'"
if [ "$cmd" = kill-node ]; then
  [[ "$kill_targets" =~ ^[0-9]+(,[0-9]+)*$ ]] || die "kill-node: expected node indices I[,J...], got '${kill_targets:-nothing}'"
  case "$kill_signal" in KILL | STOP | TERM) ;; *) die "--signal: expected KILL, STOP or TERM, got '$kill_signal'" ;; esac
elif [ "$kill_signal" != KILL ] || [ "$keep_store" = 1 ]; then
  die "--signal and --keep-store are kill-node's options"
fi

state="$state_root/cluster-${prefix%-}"
sw="${prefix}sw"       # the switch namespace
bridge="${prefix}br"   # the bridge inside it
node_dev="${prefix}eth"  # each node's end of its link

node_ns() { echo "${prefix}n$1"; }
node_addr() { echo "198.18.0.$(($1 + 1))"; }
port_dev() { echo "${prefix}p$1"; }  # the switch's end of node i's link

# Snapshot stores: zerotrain keeps them under /dev/shm/zerotrain/RUN/HOST/, and
# a node's HOST is its namespace's name (the rsh agent sets it).
store_root=${ZT_SNAPSHOT_ROOT:-/dev/shm/zerotrain}
remove_node_store() {  # node namespace name
  local d
  for d in "$store_root"/*/"$1"; do
    [ -e "$d" ] && rm -rf "$d"
  done
  rmdir "$store_root"/* 2>/dev/null
  # Open MPI's shared-memory segments of that node's dead processes (vader
  # names them by host), which a killed process cannot remove itself.
  rm -f /dev/shm/vader_segment."$1".*
  return 0
}

# ---- Preconditions: one line naming what is missing, exit 2.
preflight() {
  [ "$(id -u)" = 0 ] || die "needs root (network namespaces and tc); run it as root"
  local t
  for t in ip tc unshare timeout flock; do
    command -v "$t" >/dev/null 2>&1 || die "needs '$t' (Debian: iproute2 for ip and tc, util-linux and coreutils for the rest)"
  done
  ip netns list >/dev/null 2>&1 || die "'ip netns' does not work here: $(ip netns list 2>&1 | head -1)"
}

# Namespaces with our prefix, from ip netns (names only).
our_namespaces() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${prefix}(sw|n[0-9]+)$" || true
}

# ---- Teardown: kill what runs in our namespaces, delete them, drop the state.
kill_in_namespaces() {  # every process whose network namespace is one of ours
  local ns pids round
  for round in TERM TERM KILL; do
    pids=""
    for ns in $(our_namespaces); do pids="$pids $(ip netns pids "$ns" 2>/dev/null)"; done
    pids=$(echo $pids)
    [ -n "$pids" ] || return 0
    # shellcheck disable=SC2086
    kill -s "$round" $pids 2>/dev/null
    sleep 1
  done
  pids=""
  for ns in $(our_namespaces); do pids="$pids $(ip netns pids "$ns" 2>/dev/null)"; done
  pids=$(echo $pids)
  [ -z "$pids" ] || note "processes $pids survived SIGKILL in the cluster's namespaces"
}

teardown() {  # idempotent; prints what it removed
  local found
  found=$(our_namespaces | tr '\n' ' ')
  if [ -z "$found" ] && [ ! -e "$state" ]; then return 1; fi
  kill_in_namespaces
  local ns
  for ns in $(our_namespaces); do
    remove_node_store "$ns"
    ip netns del "$ns" 2>/dev/null || note "ip netns del $ns failed"
  done
  rm -rf "$state"
  [ -z "$(our_namespaces)" ] || die "namespaces left after teardown: $(our_namespaces | tr '\n' ' ')"
  note "removed the cluster with prefix $prefix (namespaces: ${found:-none})"
  return 0
}

# ---- Value parsing.
parse_rate() {  # "50mbit" -> bits per second; empty on a bad value
  local v=${1,,}
  [[ "$v" =~ ^([0-9]+([.][0-9]+)?)(kbit|mbit|gbit)$ ]] || return 1
  awk -v x="${BASH_REMATCH[1]}" -v u="${BASH_REMATCH[3]}" \
    'BEGIN { m = (u == "kbit") ? 1e3 : (u == "mbit") ? 1e6 : 1e9; printf "%.0f\n", x * m }'
}
parse_time_us() {  # "2ms" -> microseconds
  local v=${1,,}
  [[ "$v" =~ ^([0-9]+([.][0-9]+)?)(us|ms|s)$ ]] || return 1
  awk -v x="${BASH_REMATCH[1]}" -v u="${BASH_REMATCH[3]}" \
    'BEGIN { m = (u == "us") ? 1 : (u == "ms") ? 1e3 : 1e6; printf "%.0f\n", x * m }'
}

# ---- up.
rate_bps="" delay_us=0 jitter_us=0 rate_text="" delay_text="" jitter_text=""
parse_cluster_spec() {
  [[ "$nodes" =~ ^[1-9][0-9]*$ ]] && [ "$nodes" -le 250 ] ||
    die "--nodes: expected 1..250, got '${nodes:-nothing}'"
  [[ "$rpn" =~ ^[1-9][0-9]*$ ]] && [ "$rpn" -le 256 ] ||
    die "--ranks-per-node: expected 1..256, got '${rpn:-nothing}'"
  [ -n "$link" ] || die "--link RATE[,DELAY[,JITTER]] is required (e.g. --link 100mbit or --link 1gbit,2ms)"
  local parts
  IFS=, read -ra parts <<<"$link"
  [ ${#parts[@]} -ge 1 ] && [ ${#parts[@]} -le 3 ] || die "--link '$link': expected RATE[,DELAY[,JITTER]]"
  rate_text=${parts[0]}
  rate_bps=$(parse_rate "$rate_text") ||
    die "--link '$link': rate '$rate_text': expected a number with kbit, mbit or gbit (e.g. 100mbit)"
  [ "$rate_bps" -ge 100000 ] || die "--link '$link': rate below 100kbit"
  if [ ${#parts[@]} -ge 2 ]; then
    delay_text=${parts[1]}
    delay_us=$(parse_time_us "$delay_text") ||
      die "--link '$link': delay '$delay_text': expected a number with us, ms or s (e.g. 2ms)"
  fi
  if [ ${#parts[@]} -ge 3 ]; then
    jitter_text=${parts[2]}
    jitter_us=$(parse_time_us "$jitter_text") ||
      die "--link '$link': jitter '$jitter_text': expected a number with us, ms or s (e.g. 100us)"
    [ "$delay_us" -gt 0 ] || die "--link '$link': jitter needs a delay"
  fi
}

in_ns() { ip netns exec "$1" "${@:2}"; }

# Both sysctls hold for namespaces this script made: nothing forwards, and no
# IPv6 link-local chatter crosses the shaped links.
harden_namespace() {
  in_ns "$1" sysctl -q -w net.ipv4.ip_forward=0 net.ipv6.conf.all.disable_ipv6=1 \
    net.ipv6.conf.default.disable_ipv6=1 >/dev/null || return 1
  ip -n "$1" link set lo up
}

# tbf shapes the rate; netem, as tbf's child, delays. Half of the one-way
# delay goes on each end of a node-to-node path. The bucket holds 1 ms of
# traffic (at least two full frames): a larger one lets every message after a
# pause through at wire speed up to its size, which at 20 Mbit/s would make a
# 64 KiB message look free.
shape() {  # namespace device
  local burst=$((rate_bps / 8 / 1000))
  [ "$burst" -ge 3028 ] || burst=3028
  tc -n "$1" qdisc add dev "$2" root handle 1: tbf rate "${rate_bps}bit" burst "$burst" latency 100ms ||
    return 1
  if [ "$delay_us" -gt 0 ]; then
    local netem=(netem delay "$((delay_us / 2))us")
    [ "$jitter_us" -gt 0 ] && netem+=("$((jitter_us / 2))us")
    tc -n "$1" qdisc add dev "$2" parent 1:1 handle 10: "${netem[@]}" limit 100000 || return 1
  fi
}

netem_available() {  # probe on the switch's loopback, loading sch_netem if we can
  if tc -n "$sw" qdisc add dev lo root netem delay 1us 2>/dev/null; then
    tc -n "$sw" qdisc del dev lo root 2>/dev/null
    return 0
  fi
  command -v modprobe >/dev/null 2>&1 && modprobe sch_netem 2>/dev/null || return 1
  tc -n "$sw" qdisc add dev lo root netem delay 1us 2>/dev/null || return 1
  tc -n "$sw" qdisc del dev lo root 2>/dev/null
}

json_str() { printf '"%s"' "$1"; }

write_state() {
  local tmp="$state.tmp"
  rm -rf "$tmp"
  mkdir -p "$tmp" || return 1
  local i addrs="" nss="" hosts=""
  for ((i = 0; i < nodes; i++)); do
    addrs+="${addrs:+, }$(json_str "$(node_addr "$i")")"
    nss+="${nss:+, }$(json_str "$(node_ns "$i")")"
    hosts+="$(node_addr "$i") slots=$rpn"$'\n'
  done
  printf '%s' "$hosts" >"$tmp/hostfile"
  local delay_json=null jitter_json=null
  [ "$delay_us" -gt 0 ] && delay_json=$delay_us
  [ "$jitter_us" -gt 0 ] && jitter_json=$jitter_us
  cat >"$tmp/cluster.json" <<EOF
{"prefix": "$prefix", "nodes": $nodes, "ranks_per_node": $rpn, "world": $((nodes * rpn)),
 "link": {"spec": "$link", "rate_bits_per_s": $rate_bps, "delay_us": $delay_json, "jitter_us": $jitter_json,
          "shaping": "tbf rate on both directions of every node link; netem delay/jitter split over both ends"},
 "topology": "one link per node into one non-blocking switch (a bridge in namespace $sw)",
 "subnet": "$SUBNET", "addresses": [$addrs], "namespaces": [$nss], "switch_namespace": "$sw",
 "mpi": "Open MPI: btl tcp between nodes, vader inside a node; one orted per node",
 "created": "$(date -u +%Y-%m-%dT%H:%M:%SZ)"}
EOF
  # The rsh agent: Open MPI calls "AGENT HOST COMMAND..." as it would call ssh;
  # the command runs in that node's namespace, under the node's own hostname
  # (a UTS namespace), so that nodes look like separate hosts to Open MPI.
  {
    echo '#!/bin/sh'
    echo "# rsh agent of the emulated cluster $prefix (written by scripts/cluster.sh up)."
    echo 'while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done  # ssh-style options: none apply'
    echo 'host=$1; shift'
    echo 'case "$host" in'
    for ((i = 0; i < nodes; i++)); do echo "  $(node_addr "$i") | $(node_ns "$i")) ns=$(node_ns "$i") ;;"; done
    echo '  *) echo "cluster agent: $host is not a node of cluster '"$prefix"'" >&2; exit 255 ;;'
    echo 'esac'
    echo 'exec ip netns exec "$ns" unshare --uts /bin/sh -c "hostname $ns && $*"'
  } >"$tmp/agent"
  # MCA settings. rtc ^hwloc: orted crashes in hwloc's shared-memory topology
  # code when started this way. mpi_yield_when_idle: every node's ranks share
  # this machine's cores, and ranks spinning in MPI_Wait starve the kernel's
  # packet processing (stalls of 100 ms to seconds without it); Open MPI only
  # yields by itself when it sees a node oversubscribed. Yielding alone still
  # let two spinning ranks keep both cores for seconds, so zerotrain waits by
  # polling and sleeping (docs/clusters.md, "Stalls of seconds").
  # The collectives: zerotrain issues non-blocking ones (MPI_I*), which Open
  # MPI's libnbc schedules, and libnbc's default choices waste the links
  # (docs/clusters.md, "The collectives on a link"). Measured at 100 Mbit/s, as the
  # share of the link the bus bandwidth reaches: an in-place iallreduce is a
  # binomial reduce plus broadcast (30%), Rabenseifner's (3) reaches 90% at
  # power-of-two world sizes and the ring (1) 80% elsewhere, where
  # Rabenseifner falls to 40%; the chain ireduce (1) and ibcast (3) reach
  # 85-94% against 35-55%; recursive doubling (2) lifts iallgather from 47%
  # to 79% on 4 nodes (it is linear, the default, elsewhere).
  local world=$((nodes * rpn)) allreduce_alg=1
  [ $((world & (world - 1))) = 0 ] && allreduce_alg=3
  local mca=(
    plm_rsh_agent "$state/agent" plm_rsh_no_tree_spawn 1 rtc ^hwloc
    btl tcp,self,vader btl_tcp_if_include "$SUBNET" oob_tcp_if_include "$SUBNET"
    mpi_yield_when_idle 1 coll_libnbc_iallreduce_algorithm "$allreduce_alg"
    coll_libnbc_ireduce_algorithm 1 coll_libnbc_ibcast_algorithm 3
    coll_libnbc_iallgather_algorithm 2
  )
  {
    echo "# Environment of the emulated cluster $prefix (written by scripts/cluster.sh up)."
    echo "# mpirun must also start inside namespace $(node_ns 0): use $state/mpirun."
    echo "export ZT_CLUSTER=$state/cluster.json"
    for ((i = 0; i < ${#mca[@]}; i += 2)); do echo "export OMPI_MCA_${mca[$i]}=${mca[$((i + 1))]}"; done
  } >"$tmp/env"
  local root_flag=""
  [ "$(id -u)" = 0 ] && root_flag="--allow-run-as-root"
  {
    echo '#!/bin/sh'
    echo "# mpirun on the emulated cluster $prefix (written by scripts/cluster.sh up): starts"
    echo "# inside node 0's namespace with the hostfile and the MCA settings of $state/env."
    echo "# Arguments are mpirun's. Bounded by ZT_CLUSTER_TIMEOUT seconds (default 1800)."
    echo ". $state/env"
    echo "exec timeout --kill-after=10 \"\${ZT_CLUSTER_TIMEOUT:-1800}\" \\"
    echo "  ip netns exec $(node_ns 0) unshare --uts /bin/sh -c 'hostname $(node_ns 0) && exec \"\$@\"' sh \\"
    echo "  mpirun $root_flag --hostfile $state/hostfile -x ZT_CLUSTER \"\$@\""
  } >"$tmp/mpirun"
  chmod +x "$tmp/agent" "$tmp/mpirun"
  rm -rf "$state"
  mv "$tmp" "$state"
}

# Nothing of ours may show in the root namespace: no address in our subnet, no
# route to it, no link with our prefix.
check_root_namespace_clean() {
  ip -o addr show | grep -q ' 198\.18\.' && die "an address in 198.18.0.0/15 is in the root namespace"
  ip route show | grep -q '^198\.18\.' && die "a route to 198.18.0.0/15 is in the root namespace"
  ip -o link show | grep -q ": ${prefix}" && die "a link named ${prefix}* is in the root namespace"
  return 0
}

cmd_up() {
  preflight
  parse_cluster_spec
  mkdir -p "$state_root" || die "$state_root: cannot create the state directory"
  exec 9>"$state_root/.lock-${prefix%-}"
  flock -w 60 9 || die "another cluster.sh up/down with prefix $prefix is running"
  if [ -n "$(our_namespaces)" ] || [ -e "$state" ]; then
    note "a cluster with prefix $prefix is already there (stale or up); removing it first"
    teardown >/dev/null 2>&1
    kill_in_namespaces
  fi
  # Any failure from here on removes what was made so far.
  trap 'teardown >/dev/null 2>&1; exit 2' INT TERM
  fail_up() {
    teardown >/dev/null 2>&1
    die "up: $*"
  }
  ip netns add "$sw" 2>/dev/null || fail_up "cannot create namespace $sw: $(ip netns add "$sw" 2>&1)"
  harden_namespace "$sw" || fail_up "cannot configure namespace $sw"
  if [ "$delay_us" -gt 0 ] && ! netem_available; then
    fail_up "--link '$link' needs tc's netem for the delay, and this kernel has no sch_netem (a rate alone works with tbf)"
  fi
  ip -n "$sw" link add "$bridge" type bridge || fail_up "cannot create bridge $bridge in $sw"
  ip -n "$sw" link set "$bridge" up || fail_up "cannot bring $bridge up"
  local i ns
  for ((i = 0; i < nodes; i++)); do
    ns=$(node_ns "$i")
    ip netns add "$ns" || fail_up "cannot create namespace $ns"
    harden_namespace "$ns" || fail_up "cannot configure namespace $ns"
    # Made inside the node's namespace with its peer placed straight into the
    # switch's: the link never exists in the root namespace.
    ip -n "$ns" link add "$node_dev" type veth peer name "$(port_dev "$i")" netns "$sw" ||
      fail_up "cannot create the veth link of $ns"
    ip -n "$sw" link set "$(port_dev "$i")" master "$bridge" up || fail_up "cannot attach $(port_dev "$i")"
    ip -n "$ns" addr add "$(node_addr "$i")/24" dev "$node_dev" || fail_up "cannot address $ns"
    ip -n "$ns" link set "$node_dev" up || fail_up "cannot bring $node_dev up in $ns"
    shape "$ns" "$node_dev" || fail_up "tc on $ns/$node_dev failed (is tbf available?)"
    shape "$sw" "$(port_dev "$i")" || fail_up "tc on $sw/$(port_dev "$i") failed"
  done
  write_state || fail_up "cannot write $state"
  for ns in $(our_namespaces); do
    [ -z "$(ip -n "$ns" route show default)" ] || fail_up "$ns has a default route"
    [ "$(in_ns "$ns" sysctl -n net.ipv4.ip_forward)" = 0 ] || fail_up "$ns forwards IPv4"
  done
  check_root_namespace_clean
  trap - INT TERM
  local d=""
  [ "$delay_us" -gt 0 ] && d=", one-way delay ${delay_text}${jitter_text:+ ± $jitter_text}"
  echo "cluster $prefix up: $nodes nodes x $rpn ranks per node, links $rate_text each way$d; nodes $(node_addr 0)..$(node_addr $((nodes - 1))) in namespaces $(node_ns 0)..$(node_ns $((nodes - 1))), switch $sw"
  echo "  run:      scripts/cluster.sh run -- -np $((nodes * rpn)) build/zerotrain ..."
  echo "  launcher: $state/mpirun (mpirun's arguments; ZT_CLUSTER=$state/cluster.json reaches every rank)"
  echo "  down:     scripts/cluster.sh down"
}

cmd_down() {
  [ "$(id -u)" = 0 ] || die "needs root (network namespaces); run it as root"
  command -v ip >/dev/null 2>&1 || die "needs 'ip' (Debian: iproute2)"
  mkdir -p "$state_root" 2>/dev/null
  exec 9>"$state_root/.lock-${prefix%-}"
  flock -w 60 9 || die "another cluster.sh up/down with prefix $prefix is running"
  teardown || echo "cluster.sh: no cluster with prefix $prefix (nothing to remove)"
  return 0
}

require_up() {
  [ -r "$state/cluster.json" ] && [ -n "$(our_namespaces)" ] ||
    die "no cluster with prefix $prefix is up (scripts/cluster.sh up --nodes N --ranks-per-node G --link RATE)"
  local i
  for ((i = 0; i < $(sed -n 's/.*"nodes": \([0-9]*\).*/\1/p' "$state/cluster.json"); i++)); do
    ip netns list | grep -qw "$(node_ns "$i")" || die "cluster $prefix is broken: namespace $(node_ns "$i") is missing (run down, then up)"
  done
}

cmd_status() {
  preflight
  if [ ! -r "$state/cluster.json" ] && [ -z "$(our_namespaces)" ]; then
    echo "cluster $prefix: down"
    return 1
  fi
  [ -r "$state/cluster.json" ] || die "namespaces $(our_namespaces | tr '\n' ' ')exist without $state: a stale cluster (run down)"
  echo "cluster $prefix: up ($state/cluster.json)"
  cat "$state/cluster.json"
  local ns dev
  for ns in $(our_namespaces); do
    echo "== $ns: $(ip netns pids "$ns" | wc -l) processes"
    ip -n "$ns" -br addr show | sed 's/^/  /'
    for dev in $(ip -n "$ns" -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^${prefix}[pe]"); do
      tc -n "$ns" -s qdisc show dev "$dev" | sed "s/^/  $dev: /"
    done
  done
}

cmd_kill_node() {
  preflight
  require_up
  local n i ns pids
  n=$(sed -n 's/.*"nodes": \([0-9]*\).*/\1/p' "$state/cluster.json")
  IFS=, read -ra idx <<<"$kill_targets"
  for i in "${idx[@]}"; do
    [ "$i" -lt "$n" ] || die "kill-node: node $i is not in cluster $prefix (nodes 0..$((n - 1)))"
  done
  local -A sent
  for i in "${idx[@]}"; do  # all signals first, so that two nodes fail at once
    ns=$(node_ns "$i")
    pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
    # shellcheck disable=SC2086
    [ -z "$pids" ] || kill -s "$kill_signal" $pids 2>/dev/null
    sent[$i]=$(date +%s.%N)
  done
  for i in "${idx[@]}"; do
    ns=$(node_ns "$i")
    [ "$keep_store" = 1 ] || remove_node_store "$ns"
    echo "cluster.sh: node $i ($ns): SIG$kill_signal sent at ${sent[$i]}$([ "$keep_store" = 1 ] || echo ', snapshot store removed')"
  done
}

run_cleanup() {
  kill_in_namespaces
  if [ "$ephemeral" = 1 ]; then
    exec 9>"$state_root/.lock-${prefix%-}"
    flock -w 60 9
    teardown >/dev/null 2>&1
  fi
}

cmd_run() {
  preflight
  command -v mpirun >/dev/null 2>&1 || die "needs 'mpirun' (Debian: openmpi-bin)"
  [ ${#run_args[@]} -gt 0 ] || die "run: give mpirun's arguments after -- (e.g. run -- -np 4 build/zerotrain train CONFIG)"
  ephemeral=0
  if [ -n "$nodes$rpn$link" ]; then
    ephemeral=1
    trap 'run_cleanup; exit 130' INT TERM
    trap 'run_cleanup' EXIT
    ( cmd_up ) || exit $?
  fi
  require_up
  mkdir -p "$state_root"
  exec 8>"$state/run.lock"
  flock -n 8 || die "another run is using cluster $prefix (one run at a time)"
  local world
  world=$(sed -n 's/.*"world": \([0-9]*\).*/\1/p' "$state/cluster.json")
  local args=("${run_args[@]}")
  local a has_np=0
  for a in "${args[@]}"; do case "$a" in -np | -n | --np | -c) has_np=1 ;; esac; done
  [ "$has_np" = 1 ] || args=(-np "$world" "${args[@]}")
  trap 'run_cleanup; exit 130' INT TERM
  trap 'run_cleanup' EXIT
  ZT_CLUSTER_TIMEOUT=$run_timeout "$state/mpirun" "${args[@]}" </dev/null &
  wait $!
  local rc=$?
  [ "$rc" = 124 ] && note "run: stopped after --timeout $run_timeout s"
  return "$rc"
}

# One compound command, parsed whole before it runs: editing this file while a
# long `run` is in progress cannot feed the running shell new lines.
{
  case "$cmd" in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    run) cmd_run ;;
    launcher) require_up && echo "$state/mpirun" ;;
    env) require_up && echo "$state/env" ;;
    kill-node) cmd_kill_node ;;
  esac
  exit $?
}
