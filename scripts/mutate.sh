#!/usr/bin/env bash
# Mutation testing: plants each single-line bug of tests/mutations.txt in a
# scratch git worktree, rebuilds incrementally, runs the tests that should catch
# it, and reports which bugs the suite misses. See docs/testing.md, "Mutation
# testing", and the format notes at the top of tests/mutations.txt.
#
# usage: scripts/mutate.sh [options] [ID ...]
#   ID ...            run only these entries (shell globs: 'zero-*')
#   --file PATH       run only the entries of this source file (repeatable)
#   --list            list the entries, their snippet check and selectors; run nothing
#   --timeout S       limit for each test command (default 120 s); a test that
#                     runs past it counts as catching the mutant
#   --seed N          ZT_TEST_SEED for every test run (default: one random seed
#                     per run, printed), so that every mutant and the baseline
#                     see the same random inputs
#   --report FILE     also write the result table as markdown to FILE
#   --cache DIR       build directory whose objects seed the scratch build
#                     (default: build; anything built by build.mk with NO_CUDA=1)
#   --data DIR        directory holding data/kjv (default: the cache's, else
#                     build/'s, else one is made once in /tmp/zt-mutate-data)
#   --committed       mutate the committed tree (HEAD) only; by default the
#                     worktree also gets the checkout's uncommitted changes
#   --rev REV         mutate the tree of commit REV (implies --committed)
#   --trust-cache     the cache was built from exactly this tree: its objects
#                     count as up to date (only missing ones are built)
#   --also PATH       copy PATH from the checkout into the worktree as well (a
#                     new test not yet committed, with --committed or --rev)
#   --no-wide         survivors are not rerun on the wider set
#   --full            survivors also run the whole tests/run_all.sh
#   --no-baseline     skip running each selector once on the unmutated build
#   --keep-logs       keep the per-mutant logs (always kept when a mutant fails to build)
#   --update-cache    after the baseline build, copy its objects back into the
#                     cache, so that the next run starts without rebuilding
#                     (not with --committed: the objects are of the checkout's tree)
# Exits 0 only if every non-equivalent mutant is caught (2 for usage errors and
# refused entries, 1 otherwise). One mutant at a time: builds use make -j2.
set -uo pipefail

usage() { sed -n '/^# usage:/,/^# Exits/p' "$0" | sed 's/^# \{0,1\}//'; }

repo=$(git rev-parse --show-toplevel 2>/dev/null) || {
  echo "mutate: run inside the zerotrain git checkout" >&2
  exit 2
}
cd "$repo" || exit 2
list_file=tests/mutations.txt
timeout_s=120
seed=
report=
cache=build
data_root=
committed=0
rev=HEAD
trust=0
wide=1
full=0
baseline=1
keep_logs=0
update_cache=0
list_only=0
ids=()
files=()
also=()
while [ $# -gt 0 ]; do
  case $1 in
    --list) list_only=1 ;;
    --timeout) timeout_s=${2:?--timeout needs seconds}; shift ;;
    --timeout=*) timeout_s=${1#*=} ;;
    --seed) seed=${2:?--seed needs a number}; shift ;;
    --seed=*) seed=${1#*=} ;;
    --report) report=${2:?--report needs a file}; shift ;;
    --report=*) report=${1#*=} ;;
    --cache) cache=${2:?--cache needs a directory}; shift ;;
    --cache=*) cache=${1#*=} ;;
    --data) data_root=${2:?--data needs a directory}; shift ;;
    --data=*) data_root=${1#*=} ;;
    --file) files+=("${2:?--file needs a path}"); shift ;;
    --file=*) files+=("${1#*=}") ;;
    --list-file) list_file=${2:?}; shift ;;
    --committed) committed=1 ;;
    --rev) rev=${2:?--rev needs a commit}; committed=1; shift ;;
    --rev=*) rev=${1#*=}; committed=1 ;;
    --trust-cache) trust=1 ;;
    --also) also+=("${2:?--also needs a path}"); shift ;;
    --also=*) also+=("${1#*=}") ;;
    --no-wide) wide=0 ;;
    --full) full=1 ;;
    --no-baseline) baseline=0 ;;
    --keep-logs) keep_logs=1 ;;
    --update-cache) update_cache=1 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "mutate: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) ids+=("$1") ;;
  esac
  shift
done
[ -n "$seed" ] || seed=$(( (RANDOM << 30) ^ (RANDOM << 15) ^ RANDOM ))
[[ $seed =~ ^[0-9]+$ ]] || { echo "mutate: --seed expects a number, got '$seed'" >&2; exit 2; }
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || { echo "mutate: --timeout expects whole seconds, got '$timeout_s'" >&2; exit 2; }
[ -f "$list_file" ] || { echo "mutate: no list file $list_file" >&2; exit 2; }
if [ -n "$report" ]; then report=$(realpath -m "$report"); fi
if [ "$update_cache" = 1 ] && [ "$committed" = 1 ]; then
  echo "mutate: --update-cache needs the checkout's tree (not --committed)" >&2
  exit 2
fi

# ---- the list: parsed, checked and applied by one Python helper ----
read -r -d '' PY <<'EOF'
import fnmatch, json, os, re, sys

KEYS = ("id", "file", "find", "replace", "tests", "what", "equivalent")

def parse(path):
    entries, cur, errors = [], None, []
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            key, sep, value = line.partition(":")
            key = key.strip()
            if not sep or key not in KEYS or line[0].isspace():
                errors.append(f"{path}:{n}: expected 'KEY: value' with KEY one of {', '.join(KEYS)}")
                continue
            value = value.strip()
            if key == "id":
                cur = {"line": n, "id": value}
                entries.append(cur)
                continue
            if cur is None:
                errors.append(f"{path}:{n}: '{key}:' before the first 'id:'")
                continue
            if key in cur:
                errors.append(f"{path}:{n}: entry '{cur['id']}': second '{key}:'")
            cur[key] = value
    seen = {}
    for e in entries:
        if e["id"] in seen:
            errors.append(f"{path}:{e['line']}: id '{e['id']}' also at line {seen[e['id']]}")
        seen[e["id"]] = e["line"]
    return entries, errors

def selectors(text):
    """[tags] / "name*" (unit binary), mpi@W,W[:SPEC], e2e:NAME -> command tuples."""
    out, unit = [], []
    for item in re.findall(r'(?:[^\s"]+|"[^"]*")+', text or ""):
        if item.startswith("mpi@"):
            ws, _, spec = item[4:].partition(":")
            spec = spec or "[mpi]"
            for w in ws.split(","):
                if not w.isdigit() or not 1 <= int(w) <= 8:
                    raise ValueError(f"bad world size '{w}' in '{item}'")
                out.append(("mpi", w, spec))
        elif item.startswith("e2e:"):
            name = item[4:]
            if not os.path.isfile(f"tests/e2e/{name}.sh"):
                raise ValueError(f"no tests/e2e/{name}.sh")
            out.append(("e2e", name, ""))
        elif item.startswith("[") or item.startswith('"') or item.startswith("unit:"):
            unit.append(item[5:] if item.startswith("unit:") else item)
        else:
            raise ValueError(f"unknown selector '{item}' (expected [tag], \"name\", mpi@W:SPEC or e2e:NAME)")
    if unit:
        out.insert(0, ("unit", ",".join(unit), ""))
    return out

def check(e, root):
    for k in ("file", "find", "replace", "tests"):
        if not e.get(k):
            return f"no '{k}:'"
    if e["find"] == e["replace"]:
        return "'replace:' equals 'find:'"
    path = os.path.join(root, e["file"])
    if not os.path.isfile(path):
        return f"no file {e['file']}"
    n = open(path, encoding="utf-8").read().count(e["find"])
    if n != 1:
        return f"snippet occurs {n} times in {e['file']} (expected exactly once): {e['find']}"
    try:
        selectors(e["tests"])
    except ValueError as x:
        return f"tests: {x}"
    return ""

def what(e):
    if e.get("what"):
        return e["what"]
    a, b = e["find"], e["replace"]
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    j = 0
    while j < min(len(a), len(b)) - i and a[-1 - j] == b[-1 - j]:
        j += 1
    i = max(0, i - 12)
    j = max(0, j - 12)
    return f"{a[i:len(a) - j]} → {b[i:len(b) - j]}"

def main():
    cmd, path, root = sys.argv[1:4]
    entries, errors = parse(path)
    if errors:
        for x in errors:
            print(x, file=sys.stderr)
        sys.exit(2)
    if cmd == "select":
        ids, files = json.loads(sys.argv[4]), json.loads(sys.argv[5])
        for e in entries:
            if ids and not any(fnmatch.fnmatchcase(e["id"], p) for p in ids):
                continue
            if files and e.get("file") not in files:
                continue
            problem = check(e, root)
            sel = [] if problem else selectors(e["tests"])
            print(json.dumps({"id": e["id"], "line": e["line"], "file": e.get("file", ""),
                              "tests": e.get("tests", ""), "what": what(e) if not problem else e.get("what", ""),
                              "equivalent": e.get("equivalent", ""), "problem": problem,
                              "commands": sel}))
    elif cmd == "apply":  # apply LIST ROOT ID: write the mutated file
        e = next(x for x in entries if x["id"] == sys.argv[4])
        p = os.path.join(root, e["file"])
        text = open(p, encoding="utf-8").read()
        assert text.count(e["find"]) == 1
        with open(p, "w", encoding="utf-8") as f:
            f.write(text.replace(e["find"], e["replace"]))

main()
EOF
py() { /usr/bin/python3 -c "$PY" "$@"; }

ids_json=$(printf '%s\n' "${ids[@]+"${ids[@]}"}" | /usr/bin/python3 -c 'import json,sys; print(json.dumps([l for l in sys.stdin.read().split("\n") if l]))')
files_json=$(printf '%s\n' "${files[@]+"${files[@]}"}" | /usr/bin/python3 -c 'import json,sys; print(json.dumps([l for l in sys.stdin.read().split("\n") if l]))')
# Entries are checked against the tree they will be applied to; for --list and
# the default (uncommitted changes included) that is the checkout itself.
select_entries() { py select "$list_file" "$1" "$ids_json" "$files_json"; }
field() { /usr/bin/python3 -c 'import json,sys; e=json.loads(sys.argv[1]); v=e[sys.argv[2]]; print(v if isinstance(v,str) else json.dumps(v))' "$1" "$2"; }

if [ "$list_only" = 1 ]; then
  select_entries "$repo" | /usr/bin/python3 -c '
import json, sys
n = bad = 0
for line in sys.stdin:
    e = json.loads(line); n += 1
    if e["problem"]:
        bad += 1
        print(f"{e['"'"'id'"'"']}: REFUSED: {e['"'"'problem'"'"']}")
        continue
    eq = "  [equivalent: " + e["equivalent"] + "]" if e["equivalent"] else ""
    print(f"{e['"'"'id'"'"']:<34} {e['"'"'file'"'"']:<34} {e['"'"'tests'"'"']}{eq}")
print(f"{n} entries, {bad} refused")
sys.exit(2 if bad else 0)'
  exit $?
fi

# ---- scratch worktree, cleaned up however the run ends ----
tmp=$(mktemp -d /tmp/zt-mutate.XXXXXX)
wt=$tmp/wt
B=build-mutate  # the build directory's name inside the worktree
logs=$tmp/logs
mkdir -p "$logs"
cleanup() {
  trap - EXIT INT TERM
  if [ -n "${current_file:-}" ] && [ -f "$tmp/orig" ]; then cp -p "$tmp/orig" "$wt/$current_file"; fi
  if [ "$keep_logs" = 1 ] || [ -n "${kept:-}" ]; then
    local keep=/tmp/zt-mutate-logs.$(date +%Y%m%d-%H%M%S)
    cp -a "$logs" "$keep" && echo "mutate: logs kept in $keep" >&2
  fi
  git -C "$repo" worktree remove --force "$wt" >/dev/null 2>&1
  rm -rf "$tmp"
  git -C "$repo" worktree prune
}
trap cleanup EXIT
trap 'echo "mutate: interrupted" >&2; exit 130' INT TERM

echo "mutate: scratch worktree $wt" >&2
git worktree add --quiet --detach "$wt" "$rev" || exit 2
if [ "$committed" = 0 ]; then
  # The checkout's uncommitted state: modified and new (not ignored) files, deletions.
  git ls-files -z -m -o --exclude-standard | while IFS= read -r -d '' f; do
    [ -f "$f" ] && cp -p --parents "$f" "$wt/"
  done
  git ls-files -z -d | while IFS= read -r -d '' f; do rm -f "$wt/$f"; done
fi
for f in "${also[@]+"${also[@]}"}"; do
  [ -f "$f" ] || { echo "mutate: --also $f: no such file in the checkout" >&2; exit 2; }
  cp -p --parents "$f" "$wt/"
done
# Files equal to the checkout's take its timestamps, so that make sees what it
# would see in the checkout: only what changed since the cache was built rebuilds.
# With --trust-cache every file is older than every object instead.
(cd "$wt" && git ls-files -z -c -o --exclude-standard) | /usr/bin/python3 -c '
import filecmp, os, sys
repo, wt, trust = sys.argv[1:4]
for f in sys.stdin.buffer.read().decode().split("\0"):
    a, b = os.path.join(repo, f), os.path.join(wt, f)
    if not f or not os.path.isfile(b):
        continue
    if trust == "1":
        os.utime(b, (946684800, 946684800))  # 2000-01-01
    elif os.path.isfile(a) and filecmp.cmp(a, b, shallow=False):
        st = os.stat(a)
        os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns))' "$repo" "$wt" "$trust"

# ---- entries, checked against the tree they apply to ----
mapfile -t entries < <(select_entries "$wt")
[ ${#entries[@]} -gt 0 ] || { echo "mutate: no entries selected" >&2; exit 2; }
refused=0
for e in "${entries[@]}"; do
  p=$(field "$e" problem)
  if [ -n "$p" ]; then
    echo "mutate: $list_file:$(field "$e" line): entry '$(field "$e" id)' refused: $p" >&2
    refused=$((refused + 1))
  fi
done

# ---- the cache: objects copied with their timestamps, dependency files renamed ----
if [ -d "$cache/obj" ]; then
  mkdir -p "$wt/$B"
  cp -a "$cache/obj" "$wt/$B/obj"
  for bin in zerotrain tests; do [ -f "$cache/$bin" ] && cp -a "$cache/$bin" "$wt/$B/"; done
  # Their targets name the build directory they were made in; make needs ours.
  find "$wt/$B/obj" -name '*.d' -exec sed -i "s|^[^ :]*/obj/|$B/obj/|" {} +
else
  echo "mutate: no objects in $cache/obj: building from scratch (slow; --cache DIR names a build)" >&2
fi
build() {  # log
  (cd "$wt" && make -f build.mk BUILD=$B NO_CUDA=1 -j2 $B/zerotrain $B/tests) >"$1" 2>&1
}
echo "mutate: baseline build in the worktree" >&2
touch "$tmp/cache-stamp"
if ! build "$logs/baseline-build.log"; then
  tail -20 "$logs/baseline-build.log" >&2
  echo "mutate: the unmutated tree does not build (log above)" >&2
  kept=1
  exit 2
fi
if [ "$update_cache" = 1 ] && [ -d "$cache/obj" ]; then
  # Only what the baseline rebuilt, dependency files renamed back to the cache's name.
  name=$(realpath --relative-to="$repo" "$cache")
  (cd "$wt/$B" && find obj zerotrain tests -newer "$tmp/cache-stamp" -type f 2>/dev/null) |
    while IFS= read -r f; do
      cp -p "$wt/$B/$f" "$cache/$f"
      case $f in *.d) sed -i "s|^[^ :]*/obj/|$name/obj/|" "$cache/$f" ;; esac
    done
  echo "mutate: $cache updated from the baseline build" >&2
fi

# ---- data for the end-to-end scripts (and the unit tests' build/data/kjv) ----
need_data=0
for e in "${entries[@]}"; do [[ $(field "$e" commands) == *'"e2e"'* ]] && need_data=1; done
[ "$full" = 1 ] && need_data=1
if [ -z "$data_root" ]; then
  for d in "$cache/data" build/data /tmp/zt-mutate-data/data; do
    if [ -e "$d/kjv/.complete" ]; then data_root=$(realpath "$d"); break; fi
  done
fi
if [ -z "$data_root" ] && [ "$need_data" = 1 ]; then
  echo "mutate: making the KJV corpus once in /tmp/zt-mutate-data" >&2
  mkdir -p /tmp/zt-mutate-data
  cp -a "$wt/$B/zerotrain" /tmp/zt-mutate-data/zerotrain
  bash scripts/prepare_default_corpus.sh /tmp/zt-mutate-data >"$logs/data.log" 2>&1 ||
    { cat "$logs/data.log" >&2; exit 2; }
  data_root=/tmp/zt-mutate-data/data
fi
if [ -n "$data_root" ]; then
  data_root=$(realpath "$data_root")
  mkdir -p "$wt/build"
  [ -e "$wt/build/data" ] || ln -s "$data_root" "$wt/build/data"
fi

export ZT_BIN=$B/zerotrain ZT_DATA_DIR=${data_root:-build/data}/kjv
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export ZT_TEST_SEED=$seed
echo "mutate: ZT_TEST_SEED=$seed" >&2

# Runs one selector command in the worktree; 0: passed.
run_cmd() {  # kind arg spec log
  local kind=$1 arg=$2 spec=$3 log=$4
  case $kind in
    unit) (cd "$wt" && timeout -k 10 "$timeout_s" $B/tests -w NoTests "$arg") >"$log" 2>&1 ;;
    mpi) (cd "$wt" && timeout -k 10 "$timeout_s" mpirun --allow-run-as-root --oversubscribe -np "$arg" \
            $B/tests -w NoTests "$spec") >"$log" 2>&1 ;;
    e2e) (cd "$wt" && timeout -k 10 "$timeout_s" bash "tests/e2e/$arg.sh") >"$log" 2>&1 ;;
    full) (cd "$wt" && BUILD=$B timeout -k 10 $((timeout_s * 20)) bash tests/run_all.sh) >"$log" 2>&1 ;;
  esac
}
label() {  # kind arg spec
  case $1 in
    unit) echo "$2" ;;
    mpi) if [ "$3" = "[mpi]" ]; then echo "mpi@$2"; else echo "mpi@$2:$3"; fi ;;
    e2e) echo "e2e:$2" ;;
    full) echo "run_all.sh" ;;
  esac
}
commands_of() {  # entry -> "kind<TAB>arg<TAB>spec" lines
  /usr/bin/python3 -c 'import json,sys
for c in json.loads(sys.argv[1])["commands"]: print("\t".join(c))' "$1"
}

# ---- baseline: every selector passes on the unmutated build ----
wide_cmds=()
[ "$wide" = 1 ] && wide_cmds=("unit	~[mpi]	" "mpi	2	[mpi]" "mpi	3	[mpi]" "mpi	4	[mpi]")
[ "$full" = 1 ] && wide_cmds+=("full		")
declare -A broken=()
if [ "$baseline" = 1 ]; then
  declare -A seen=()
  for e in "${entries[@]}" WIDE; do
    if [ "$e" != WIDE ]; then [ -n "$(field "$e" problem)" ] && continue; fi
    while IFS=$'\t' read -r kind arg spec; do
      key="$kind|$arg|$spec"
      [ -n "${seen[$key]:-}" ] && continue
      seen[$key]=1
      log="$logs/baseline-$(label "$kind" "$arg" "$spec" | tr -c 'A-Za-z0-9@._-' _).log"
      start=$(date +%s)
      if run_cmd "$kind" "$arg" "$spec" "$log"; then
        echo "mutate: baseline $(label "$kind" "$arg" "$spec"): pass ($(($(date +%s) - start)) s)" >&2
      else
        echo "mutate: baseline $(label "$kind" "$arg" "$spec"): FAILS on the unmutated tree (log: $log)" >&2
        broken[$key]=1
        kept=1
      fi
    done < <(if [ "$e" = WIDE ]; then printf '%s\n' "${wide_cmds[@]+"${wide_cmds[@]}"}"; else commands_of "$e"; fi)
  done
fi

# The pristine build: restored after each mutant.
cp -a "$wt/$B" "$tmp/pristine"

# ---- the mutants ----
rows=()  # id \t file \t what \t tests \t result \t seconds
survivors=0
n=0
total=${#entries[@]}
for e in "${entries[@]}"; do
  n=$((n + 1))
  id=$(field "$e" id)
  file=$(field "$e" file)
  what=$(field "$e" what)
  tests=$(field "$e" tests)
  equiv=$(field "$e" equivalent)
  problem=$(field "$e" problem)
  start=$(date +%s)
  safe=$(echo "$id" | tr -c 'A-Za-z0-9._-' _)
  if [ -n "$problem" ]; then
    rows+=("$id"$'\t'"$file"$'\t'"$what"$'\t'"$tests"$'\t'"refused: $problem"$'\t'0)
    echo "[$n/$total] $id: refused" >&2
    continue
  fi
  mapfile -t cmds < <(commands_of "$e")
  skip=
  for c in "${cmds[@]}"; do
    IFS=$'\t' read -r kind arg spec <<<"$c"
    [ -n "${broken[$kind|$arg|$spec]:-}" ] && skip="$(label "$kind" "$arg" "$spec")"
  done
  if [ -n "$skip" ]; then
    rows+=("$id"$'\t'"$file"$'\t'"$what"$'\t'"$tests"$'\t'"not run: $skip fails unmutated"$'\t'0)
    echo "[$n/$total] $id: not run ($skip fails on the unmutated tree)" >&2
    survivors=$((survivors + 1))
    continue
  fi

  cp -p "$wt/$file" "$tmp/orig"
  current_file=$file
  touch "$tmp/stamp"
  py apply "$list_file" "$wt" "$id"
  result=
  if ! build "$logs/$safe.build.log"; then
    result="not compiled"
    kept=1
  else
    for c in "${cmds[@]}"; do
      IFS=$'\t' read -r kind arg spec <<<"$c"
      run_cmd "$kind" "$arg" "$spec" "$logs/$safe.$kind.log"
      rc=$?
      if [ $rc -ne 0 ]; then
        result="caught by $(label "$kind" "$arg" "$spec")"
        [ $rc -eq 124 ] && result="$result (timeout)"
        break
      fi
    done
    if [ -z "$result" ] && [ -n "$equiv" ]; then
      result=equivalent
    elif [ -z "$result" ]; then
      for c in "${wide_cmds[@]+"${wide_cmds[@]}"}"; do
        IFS=$'\t' read -r kind arg spec <<<"$c"
        [ -n "${broken[$kind|$arg|$spec]:-}" ] && continue  # fails unmutated: no evidence
        echo "[$n/$total] $id: survived its tests; trying $(label "$kind" "$arg" "$spec")" >&2
        run_cmd "$kind" "$arg" "$spec" "$logs/$safe.wide.log"
        rc=$?
        if [ $rc -ne 0 ]; then
          result="caught by $(label "$kind" "$arg" "$spec") (not by its tests)"
          [ $rc -eq 124 ] && result="$result (timeout)"
          break
        fi
      done
      [ -z "$result" ] && result=survived
    elif [ "$result" != equivalent ] && [ -n "$equiv" ]; then
      result="$result (listed as equivalent)"
    fi
  fi
  # Restore the source (content and timestamp) and every build file the mutant touched.
  cp -p "$tmp/orig" "$wt/$file"
  current_file=
  find "$wt/$B" -newer "$tmp/stamp" -type f -print0 | while IFS= read -r -d '' f; do
    rel=${f#"$wt/$B/"}
    if [ -e "$tmp/pristine/$rel" ]; then cp -p "$tmp/pristine/$rel" "$f"; else rm -f "$f"; fi
  done
  secs=$(($(date +%s) - start))
  case $result in
    caught*"listed as equivalent"*) survivors=$((survivors + 1)) ;;  # the list is wrong
    caught* | equivalent) ;;
    *) survivors=$((survivors + 1)) ;;
  esac
  rows+=("$id"$'\t'"$file"$'\t'"$what"$'\t'"$tests"$'\t'"$result"$'\t'"$secs")
  echo "[$n/$total] $id: $result ($secs s)" >&2
done

# ---- the table ----
table() {  # markdown?
  printf '%s\n' "${rows[@]}" | /usr/bin/python3 -c '
import sys
md = sys.argv[1] == "1"
rows = [l.rstrip("\n").split("\t") for l in sys.stdin if l.strip()]
head = ["id", "file", "mutation", "covering tests", "result", "s"]
def cell(s): return s.replace("|", "\\|")
if md:
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---"] * 5 + ["--:"]) + "|")
    for r in rows: print("| " + " | ".join([f"`{cell(r[0])}`", f"`{r[1]}`", cell(r[2]), cell(r[3]), cell(r[4]), r[5]]) + " |")
else:
    w = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    w[2] = min(w[2], 60); w[3] = min(w[3], 40)
    fmt = lambda r: "  ".join(c[:w[i]].ljust(w[i]) if i < 5 else c.rjust(w[i]) for i, c in enumerate(r))
    print(fmt(head)); print(fmt(["-" * x for x in w]))
    for r in rows: print(fmt(r))
' "$1"
}
count() { printf '%s\n' "${rows[@]}" | awk -F'\t' -v p="$1" '$5 ~ p' | wc -l; }
summary="$total mutants: $(count '^caught') caught, $(count '^survived') survived, $(count '^equivalent') equivalent, $(count '^not compiled') not compiled, $(count '^(refused|not run)') refused or not run"
echo
table 0
echo
echo "$summary"
if [ -n "$report" ]; then
  {
    echo "Mutation testing, $(date -u '+%Y-%m-%d %H:%M UTC'), tree $(git rev-parse --short "$rev")$([ "$committed" = 0 ] && echo ' plus uncommitted changes'), timeout ${timeout_s} s, ZT_TEST_SEED=$seed"
    echo
    table 1
    echo
    echo "$summary"
  } >"$report"
  echo "mutate: report written to $report" >&2
fi
[ "$refused" -gt 0 ] && exit 2
[ "$survivors" -eq 0 ]
