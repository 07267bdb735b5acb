#!/usr/bin/env bash
# Runs a sweep of zerotrain training runs under mpirun, one run directory per
# point, then `zerotrain report OUT` tabulates them.
#
#   scripts/sweep.sh --grid GRID [--config BASE.yaml] --out DIR [options]
#   scripts/sweep.sh --out DIR [options] CONFIG.yaml [CONFIG.yaml ...]
#
# A grid file (docs/PMBS.md, "Grid files") holds one point per line,
# "NAME key=value ...", plus an optional "@config PATH" line naming the base
# config; without --grid every CONFIG is a point named after its file.
#
# Options:
#   -np N, --np N          ranks per point (default: the number of CPU cores)
#   --out DIR              DIR/NAME/ per point: train.log, command.sh, the run's files
#   --repeat K             K sittings (default 1), the points interleaved: sitting 1
#                          runs every point once, then sitting 2 runs them all again,
#                          so that drift reaches every point alike; with K > 1 each
#                          run goes to DIR/sitting-k/NAME/ (k = 1..K), and
#                          `zerotrain report DIR` gives medians over the sittings
#   --set KEY=VALUE        override for every point (repeatable); a grid point's
#                          own value for the same key wins
#   --cluster NxG          run every point on an emulated cluster of N nodes x G ranks
#                          (scripts/cluster.sh): brought up before the first point,
#                          torn down at the end, on error and on Ctrl-C; -np is N*G
#   --link RATE[,DELAY[,JITTER]]  the cluster's links (with --cluster; e.g. 100mbit)
#   --hosts H1,H2,...      mpirun's host list (Open MPI --host, MPICH -hosts)
#   --hostfile FILE        mpirun's host file (Open MPI --hostfile, MPICH -f)
#   --mpirun-args "ARGS"   extra mpirun words, split at blanks (no quoting; repeatable)
#   --oversubscribe auto|yes|no      Open MPI --oversubscribe; auto: when more ranks
#                                    than physical cores and no hosts given
#   --allow-run-as-root auto|yes|no  Open MPI --allow-run-as-root; auto: when root
#   --only REGEX           run only the points whose name matches (bash =~)
#   --timeout SECONDS      stop a point after this long (exit code 124); 0 = never
#   --bin PATH             zerotrain binary (default: $ZT_BIN or build/zerotrain)
#   --dry-run              print the commands, run nothing
# Environment: MPIRUN (default mpirun), ZT_BIN.
#
# Resumable: a run whose DIR/NAME/summary.json (DIR/sitting-k/NAME/summary.json
# with --repeat) exists is skipped. A failed run goes into DIR/failed.tsv (point,
# exit code, log, note; the point is sitting-k/NAME with --repeat; rewritten by
# every sweep) and the sweep goes on; the exit status is 1 if any point failed,
# 2 on a usage or grid error, 130 when interrupted.
set -u

die() {
  echo "sweep.sh: $*" >&2
  exit 2
}
usage() {
  sed -n '2,/^set -u$/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
  exit 2
}
need_value() {
  [ $# -ge 2 ] || die "$1 needs a value"
}
auto_yes_no() {
  [[ "$2" == auto || "$2" == yes || "$2" == no ]] || die "$1: expected auto, yes or no, got '$2'"
}

bin=${ZT_BIN:-build/zerotrain}
mpirun_cmd=${MPIRUN:-mpirun}
np=""
out=""
grid=""
configs=()
common_sets=()
hosts=""
hostfile=""
mpirun_extra=()
oversubscribe=auto
allow_root=auto
only=""
point_timeout=0
repeat=1
dry_run=0
cluster_spec=""
cluster_link=""

while [ $# -gt 0 ]; do
  case "$1" in
    -np | --np) need_value "$@"; np=$2; shift 2 ;;
    --out) need_value "$@"; out=$2; shift 2 ;;
    --grid) need_value "$@"; grid=$2; shift 2 ;;
    --config) need_value "$@"; configs+=("$2"); shift 2 ;;
    --set) need_value "$@"; common_sets+=("$2"); shift 2 ;;
    --cluster) need_value "$@"; cluster_spec=$2; shift 2 ;;
    --link) need_value "$@"; cluster_link=$2; shift 2 ;;
    --hosts) need_value "$@"; hosts=$2; shift 2 ;;
    --hostfile) need_value "$@"; hostfile=$2; shift 2 ;;
    --mpirun-args)
      need_value "$@"
      read -ra words <<<"$2"
      mpirun_extra+=("${words[@]}")
      shift 2 ;;
    --oversubscribe) need_value "$@"; auto_yes_no "$1" "$2"; oversubscribe=$2; shift 2 ;;
    --allow-run-as-root) need_value "$@"; auto_yes_no "$1" "$2"; allow_root=$2; shift 2 ;;
    --only) need_value "$@"; only=$2; shift 2 ;;
    --timeout) need_value "$@"; point_timeout=$2; shift 2 ;;
    --repeat) need_value "$@"; repeat=$2; shift 2 ;;
    --bin) need_value "$@"; bin=$2; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h | --help) usage ;;
    -*) die "unknown option '$1' (--help lists them)" ;;
    *) configs+=("$1"); shift ;;
  esac
done

[ -n "$out" ] || die "--out DIR is required"
[ ! -e "$out" ] || [ -d "$out" ] || die "--out $out: exists and is not a directory"
[[ "$point_timeout" =~ ^[0-9]+$ ]] || die "--timeout: expected whole seconds, got '$point_timeout'"
[[ "$repeat" =~ ^[1-9][0-9]{0,5}$ ]] || die "--repeat: expected a whole number of sittings >= 1, got '$repeat'"
physical_cores=$(lscpu -p=Core,Socket 2>/dev/null | grep -v '^#' | sort -u | wc -l)
[ "$physical_cores" -gt 0 ] 2>/dev/null || physical_cores=$(nproc 2>/dev/null || echo 1)
cluster_sh="$(dirname "$0")/cluster.sh"
if [ -n "$cluster_spec" ]; then
  [[ "$cluster_spec" =~ ^([1-9][0-9]*)x([1-9][0-9]*)$ ]] ||
    die "--cluster: expected NxG (nodes x ranks per node, e.g. 4x1), got '$cluster_spec'"
  cluster_nodes=${BASH_REMATCH[1]}
  cluster_rpn=${BASH_REMATCH[2]}
  [ -n "$cluster_link" ] || die "--cluster needs --link RATE[,DELAY[,JITTER]] (e.g. --link 100mbit)"
  [ -z "$hosts$hostfile" ] || die "--cluster brings its own nodes; drop --hosts/--hostfile"
  [ -z "$np" ] || [ "$np" = $((cluster_nodes * cluster_rpn)) ] ||
    die "-np $np: --cluster $cluster_spec runs $((cluster_nodes * cluster_rpn)) ranks"
  np=$((cluster_nodes * cluster_rpn))
elif [ -n "$cluster_link" ]; then
  die "--link needs --cluster NxG"
fi
[ -n "$np" ] || np=$physical_cores
[[ "$np" =~ ^[1-9][0-9]*$ ]] || die "-np: expected a positive integer, got '$np'"
for s in "${common_sets[@]}"; do
  [[ "$s" =~ ^[a-z_]+\.[a-z0-9_]+=.*$ ]] || die "--set '$s': expected section.key=value"
done

# ---- Points: names[i], and sets[i] = its overrides joined by \x1f (unit
# separator), split again with read -ra so that values are never globbed.
SEP=$'\x1f'
names=()
sets=()
base_config=""
if [ -n "$grid" ]; then
  [ -f "$grid" ] || die "$grid: not a regular file (expected a grid file, one point per line)"
  [ -r "$grid" ] || die "$grid: cannot read the grid file"
  [ ${#configs[@]} -le 1 ] || die "--grid takes one base config, got ${#configs[@]}"
  declare -A line_of_name=() line_of_set=()
  lineno=0
  while IFS= read -r line || [ -n "$line" ]; do
    lineno=$((lineno + 1))
    line=${line%$'\r'}
    read -ra words <<<"$line"
    [ ${#words[@]} -eq 0 ] && continue
    [[ "${words[0]}" == \#* ]] && continue
    where="$grid:$lineno"
    if [ "${words[0]}" = "@config" ]; then
      [ ${#words[@]} -eq 2 ] || die "$where: expected '@config PATH'"
      base_config=${words[1]}
      continue
    fi
    [[ "${words[0]}" == @* ]] && die "$where: unknown directive '${words[0]}' (only @config)"
    name=${words[0]}
    [[ "$name" =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*$ ]] ||
      die "$where: point name '$name': expected letters, digits and . _ + -"
    [ -z "${line_of_name[$name]+x}" ] || die "$where: point '$name' already defined on line ${line_of_name[$name]}"
    line_of_name[$name]=$lineno
    for w in "${words[@]:1}"; do
      [[ "$w" =~ ^[a-z_]+\.[a-z0-9_]+=[^[:space:]]+$ ]] ||
        die "$where: '$w': expected section.key=value"
    done
    joined="overrides: $(printf '%s\n' "${words[@]:1}" | sort | tr '\n' ' ')"
    [ -z "${line_of_set[$joined]+x}" ] ||
      die "$where: point '$name' has the same overrides as line ${line_of_set[$joined]}"
    line_of_set[$joined]=$lineno
    names+=("$name")
    sets+=("$(IFS=$SEP; printf '%s' "${words[*]:1}")")
  done <"$grid"
  [ ${#configs[@]} -eq 1 ] && base_config=${configs[0]}
  [ -n "$base_config" ] || die "$grid: no '@config PATH' line and no --config given"
  [ -r "$base_config" ] || die "$base_config: cannot read the base config (relative to the current directory: run from the repository root)"
else
  [ ${#configs[@]} -gt 0 ] || die "nothing to run: give --grid GRID or CONFIG files (--help)"
  declare -A config_of_name=()
  for c in "${configs[@]}"; do
    [ -r "$c" ] || die "$c: cannot read the config"
    name=$(basename "$c")
    name=${name%.yaml}
    name=${name%.yml}
    [ -z "${config_of_name[$name]+x}" ] || die "$c: point name '$name' already taken by ${config_of_name[$name]}"
    config_of_name[$name]=$c
    names+=("$name")
    sets+=("")
  done
fi

# --only keeps matching points; the config of point i is base_config or configs[i].
selected=()
for i in "${!names[@]}"; do
  if [ -z "$only" ] || [[ "${names[$i]}" =~ $only ]]; then selected+=("$i"); fi
done
[ ${#selected[@]} -gt 0 ] || die "no point matches --only '$only'"

# Keys that both --set and some point set: the point's value wins; say so once.
for s in "${common_sets[@]}"; do
  key=${s%%=*}
  for i in "${selected[@]}"; do
    if [[ "$SEP${sets[$i]}" == *"$SEP$key="* ]]; then
      echo "sweep.sh: note: --set $key is overridden by the grid's own value where a point sets it" >&2
      break
    fi
  done
done

# ---- The launcher.
is_openmpi=0
if "$mpirun_cmd" --version 2>&1 | grep -q "Open MPI"; then is_openmpi=1; fi
if [ "$dry_run" = 0 ]; then
  command -v "$mpirun_cmd" >/dev/null 2>&1 || die "$mpirun_cmd: not found (set MPIRUN)"
  [ -x "$bin" ] || die "$bin: no zerotrain binary there (build it, or pass --bin / set ZT_BIN)"
fi
# On a cluster, each point goes through `cluster.sh run`, which starts mpirun
# inside node 0 with the cluster's hostfile and MCA settings (and
# --allow-run-as-root) and leaves no process behind in the cluster.
if [ -n "$cluster_spec" ]; then
  launch=("$cluster_sh" run -- -np "$np")
else
  launch=("$mpirun_cmd" -np "$np")
fi
if [ -n "$hosts" ]; then
  if [ "$is_openmpi" = 1 ]; then launch+=(--host "$hosts"); else launch+=(-hosts "$hosts"); fi
fi
if [ -n "$hostfile" ]; then
  [ -r "$hostfile" ] || die "$hostfile: cannot read the host file"
  if [ "$is_openmpi" = 1 ]; then launch+=(--hostfile "$hostfile"); else launch+=(-f "$hostfile"); fi
fi
if [ "$allow_root" = yes ] || { [ "$allow_root" = auto ] && [ "$is_openmpi" = 1 ] &&
  [ "$(id -u)" = 0 ] && [ -z "$cluster_spec" ]; }; then
  launch+=(--allow-run-as-root)
fi
if [ "$oversubscribe" = yes ] || { [ "$oversubscribe" = auto ] && [ "$is_openmpi" = 1 ] &&
  [ -z "$hosts$hostfile$cluster_spec" ] && [ "$np" -gt "$physical_cores" ]; }; then
  launch+=(--oversubscribe)
fi
launch+=("${mpirun_extra[@]}")

# ---- The sweep.
format_seconds() {
  local t=$1
  if [ "$t" -ge 3600 ]; then printf '%dh%02dm' $((t / 3600)) $((t / 60 % 60))
  else printf '%dm%02ds' $((t / 60)) $((t % 60)); fi
}
point_config() {
  if [ -n "$grid" ]; then echo "$base_config"; else echo "${configs[$1]}"; fi
}
# Run j of the sweep: sitting j / points + 1, point selected[j % points]; the
# points inside each sitting, so that every sitting sees all of them in turn.
points=${#selected[@]}
total=$((points * repeat))
run_of() {
  run_point=${selected[$(($1 % points))]}
  run_name=${names[$run_point]}
  if [ "$repeat" = 1 ]; then run_rel=$run_name; else run_rel="sitting-$(($1 / points + 1))/$run_name"; fi
  run_dir="$out/$run_rel"
}
command_of() {
  cmd=("${launch[@]}" "$bin" train "$(point_config "$1")" --run-dir "$2")
  local s
  for s in "${common_sets[@]}"; do cmd+=(--set "$s"); done
  if [ -n "${sets[$1]}" ]; then
    IFS=$SEP read -ra point_sets <<<"${sets[$1]}"
    for s in "${point_sets[@]}"; do cmd+=(--set "$s"); done
  fi
}

to_run=0
for ((j = 0; j < total; j++)); do
  run_of "$j"
  [ -s "$run_dir/summary.json" ] || to_run=$((to_run + 1))
done
count_label=" points"
[ "$repeat" = 1 ] || count_label=" runs ($repeat sittings of $points points)"

if [ "$dry_run" = 1 ]; then
  echo "# sweep: $total$count_label, $to_run to run, $np ranks each; runs under $out"
  [ -z "$cluster_spec" ] ||
    echo "# on an emulated cluster: $cluster_sh up --nodes $cluster_nodes --ranks-per-node $cluster_rpn --link $cluster_link"
  for ((j = 0; j < total; j++)); do
    run_of "$j"
    [ -s "$run_dir/summary.json" ] && echo "# $run_rel: done (summary.json exists)" && continue
    command_of "$run_point" "$run_dir"
    printf '%q ' "${cmd[@]}"
    echo
  done
  exit 0
fi

mkdir -p "$out" || die "$out: cannot create"
failed_tsv="$out/failed.tsv"
printf 'point\texit_code\tlog\tnote\n' >"$failed_tsv"
interrupted=0
trap 'interrupted=1' INT TERM
if [ -n "$cluster_spec" ] && [ "$to_run" -gt 0 ]; then
  trap '"$cluster_sh" down' EXIT
  "$cluster_sh" up --nodes "$cluster_nodes" --ranks-per-node "$cluster_rpn" --link "$cluster_link" ||
    die "--cluster $cluster_spec --link $cluster_link: the cluster did not come up"
  [ "$interrupted" = 0 ] || exit 130
  cp "$("$cluster_sh" env | sed 's/env$/cluster.json/')" "$out/cluster.json" 2>/dev/null
fi

echo "sweep: $total$count_label, $((total - to_run)) already done, $to_run to run; $np ranks each; $(printf '%q ' "${launch[@]}")"
ok=0 failed=0 skipped=0 ran=0 ran_seconds=0
for ((j = 0; j < total; j++)); do
  k=$((j + 1))
  run_of "$j"
  name=$run_rel
  command_of "$run_point" "$run_dir"
  if [ -s "$run_dir/summary.json" ]; then
    skipped=$((skipped + 1))
    why="summary.json exists"
    if [ -r "$run_dir/command.sh" ] && [ "$(cat "$run_dir/command.sh")" != "$(printf '%q ' "${cmd[@]}")" ]; then
      why="$why, but from another command; delete $run_dir to rerun it"
    fi
    echo "[$k/$total] $name: skipped ($why)"
    continue
  fi
  mkdir -p "$run_dir" || die "$run_dir: cannot create"
  printf '%q ' "${cmd[@]}" >"$run_dir/command.sh"
  echo >>"$run_dir/command.sh"
  log="$run_dir/train.log"
  started=$SECONDS
  if [ "$point_timeout" -gt 0 ]; then
    timeout --foreground --kill-after=30 "$point_timeout" "${cmd[@]}" >"$log" 2>&1 </dev/null
  else
    "${cmd[@]}" >"$log" 2>&1 </dev/null
  fi
  rc=$?
  if [ "$interrupted" = 1 ]; then
    [ -e "$run_dir/summary.json" ] && mv -f "$run_dir/summary.json" "$run_dir/summary.failed.json"
    echo "sweep: interrupted during $name (exit $rc); rerun the same command to resume" >&2
    exit 130
  fi
  took=$((SECONDS - started))
  ran=$((ran + 1))
  ran_seconds=$((ran_seconds + took))
  if [ "$rc" = 0 ] && [ -s "$run_dir/summary.json" ]; then
    ok=$((ok + 1))
    tok_s=$(grep -o '"tokens_per_second":[-0-9.eE+]*' "$run_dir/summary.json" | head -1 | cut -d: -f2)
    result="ok in ${took}s, $(printf '%.0f' "${tok_s:-0}") tok/s"
  else
    failed=$((failed + 1))
    # zerotrain writes a summary when stopped by a signal too; keep it out of
    # the way so that a rerun does not take the point for finished.
    [ -e "$run_dir/summary.json" ] && mv -f "$run_dir/summary.json" "$run_dir/summary.failed.json"
    note="exited $rc"
    [ "$rc" = 124 ] && [ "$point_timeout" -gt 0 ] && note="timed out after ${point_timeout}s"
    [ "$rc" = 0 ] && note="exited 0 without summary.json"
    last=$(grep -v '^[[:space:]]*$' "$log" | tail -1 | tr '\t' ' ' | cut -c1-200)
    [ -n "$last" ] && note="$note: $last"
    printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$log" "$note" >>"$failed_tsv"
    result="FAILED (exit $rc; log $log)"
  fi
  remaining=$((to_run - ran))
  eta=$((ran_seconds * remaining / ran))
  echo "[$k/$total] $name: $result | $ok ok, $failed failed, $skipped skipped | ETA $(format_seconds "$eta")"
done

echo "sweep: $ok ok, $failed failed, $skipped skipped; runs in $out"
if [ "$failed" -gt 0 ]; then
  echo "sweep: failed points are listed in $failed_tsv" >&2
  exit 1
fi
echo "sweep: next: $bin report $out"
exit 0
