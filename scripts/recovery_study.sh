#!/usr/bin/env bash
# What a failure costs, measured on emulated clusters (docs/recovery.md,
# "Measured failures"): for each system, model, failure kind and recovery
# path, TRIALS runs under scripts/supervise.sh, each failed once, then recovered.
#
#   scripts/recovery_study.sh --out DIR [--trials N] [--systems "4x1 2x2 2x4"]
#       [--models "tiny cpu_base"] [--kinds "rank node two_nodes"]
#       [--paths "memory disk10 disk100"] [--steps S] [--link RATE] [--phases]
#
# Every run is MiCS stage 3 with shard groups of one node (so every node holds
# a whole copy; on N x 1, groups of two ranks). Paths: memory =
# train.recovery: memory (snapshots every step; checkpoints every 10 steps are
# the last resort); diskE = no snapshots, checkpoints every E steps: --recover
# falls back to the newest checkpoint. The failure lands at a random step K
# after the first checkpoint: K in E+1..E+40 (E = 10 for memory) and at most
# S - 6, in runs of S steps (--steps) or E + 50 where that is more (disk100:
# 150 steps, the failure in step 101..140).
# Where in step K:
#   random (default): at a random moment once K steps are logged;
#   --phases: placed by the ZT_FAULT_STOP_AT hook (docs/recovery.md, "Placing
#     a failure in a phase"): a random rank stops itself (SIGSTOP) on entering
#     the trial's phase of step K (trial k takes phase k of forward, backward,
#     reduce, zero_step, snapshot_copy, cycling; disk paths, with no snapshot,
#     cycle over the first four); the script sees it stopped and does the failure.
# Kinds: rank = kill -9 of one rank (random, or the stopped one); node =
# cluster.sh kill-node of one node (its processes and its snapshot store;
# with --phases the stopped rank's node); two_nodes = that node and another.
# Each trial writes DIR/SYSTEM/MODEL/KIND-PATH-K/ (the run, the supervisor's
# attempts.jsonl, kill.json); scripts/recovery_summary.py DIR turns them into
# the tables. Times are wall clock: the machine should be otherwise idle.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "recovery_study.sh: $*" >&2; exit 2; }
out="" trials=3 systems="4x1 2x2 2x4" models="tiny cpu_base" kinds="rank node two_nodes"
paths="memory disk10" steps=120 link=1gbit placement=random
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --trials) trials=$2; shift 2 ;;
    --systems) systems=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --kinds) kinds=$2; shift 2 ;;
    --paths) paths=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --link) link=$2; shift 2 ;;
    --phases) placement=phase; shift ;;
    *) die "unknown option '$1'" ;;
  esac
done
[ -n "$out" ] || die "--out DIR is required"
[[ "$trials" =~ ^[1-9][0-9]*$ ]] || die "--trials: expected a count, got '$trials'"
[[ "$steps" =~ ^[1-9][0-9]*$ ]] && [ "$steps" -ge 20 ] || die "--steps: expected at least 20, got '$steps'"
[[ "$link" =~ ^[0-9]+[kmg]bit$ ]] || die "--link: expected a rate such as 1gbit, got '$link'"
ZT_BIN=${ZT_BIN:-$here/build/zerotrain}
ZT_DATA_DIR=${ZT_DATA_DIR:-$here/build/data/kjv}
[ -x "$ZT_BIN" ] || die "no zerotrain at $ZT_BIN (make, or set ZT_BIN)"
P=${ZT_STUDY_PREFIX:-zrs-}
C=("$here/scripts/cluster.sh" --prefix "$P")
trap '"${C[@]}" down >/dev/null 2>&1' EXIT
mkdir -p "$out" || die "cannot create $out"
cd "$here" || die "cannot enter $here"

DATA=(--set "data.train=$ZT_DATA_DIR/train_*.bin" --set "data.val=$ZT_DATA_DIR/val_*.bin"
  --set data.tokenizer=byte --set train.eval_every=0 --set train.sample_every=0)
model_args() {
  case "$1" in
    tiny) echo "configs/tiny.yaml --set model.vocab_size=256 --set model.n_layer=2 --set model.n_embd=64 --set model.seq_len=64 --set train.micro_batch=2" ;;
    cpu_base) echo "configs/pmbs/cpu_base.yaml --set train.micro_batch=4" ;;
    *) die "unknown model '$1' (tiny, cpu_base)" ;;
  esac
}
PHASES=(forward backward reduce zero_step snapshot_copy)
ranks_on() { for p in $(ip netns pids "${P}n$1" 2>/dev/null); do [ "$(cat /proc/"$p"/comm 2>/dev/null)" = zerotrain ] && echo "$p"; done; }
records() { [ -f "$1" ] && wc -l <"$1" || echo 0; }
# The node (index) and pid of the cluster's zerotrain process in state T (stopped), if any.
stopped_rank() {
  local i p
  for ((i = 0; i < nodes; i++)); do
    for p in $(ranks_on "$i"); do
      [ "$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f1)" = T ] && echo "$i $p" && return
    done
  done
}

for sys in $systems; do
  [[ "$sys" =~ ^([0-9]+)x([0-9]+)$ ]] || die "--systems: '$sys' is not NxG"
  nodes=${BASH_REMATCH[1]} rpn=${BASH_REMATCH[2]} world=$((BASH_REMATCH[1] * BASH_REMATCH[2]))
  shard=$rpn
  [ "$rpn" = 1 ] && shard=2
  "${C[@]}" up --nodes "$nodes" --ranks-per-node "$rpn" --link "$link" >/dev/null || die "cluster $sys did not come up"
  for model in $models; do
    read -ra margs <<<"$(model_args "$model")"
    for kind in $kinds; do
      for path in $paths; do
        for ((k = 1; k <= trials; k++)); do
          dir="$out/$sys/$model/$kind-$path-$k"
          [ "$placement" = phase ] && dir="$out/$sys/$model/$kind-$path-phase$k"
          rm -rf "$dir" && mkdir -p "$dir"
          zargs=("${margs[@]}" "${DATA[@]}" --set zero.stage=3
            --set zero.mics_shard_size="$shard" --set train.global_batch_tokens=$((world * $(
              [ "$model" = tiny ] && echo 128 || echo 512)))
            --run-dir "$dir/run")
          case "$path" in
            memory) zargs+=(--set train.recovery=memory --set train.checkpoint_every=10) every=10 ;;
            disk*) zargs+=(--set train.recovery=none --set train.checkpoint_every="${path#disk}") every=${path#disk} ;;
            *) die "unknown path '$path' (memory, diskE)" ;;
          esac
          [[ "$every" =~ ^[1-9][0-9]*$ ]] || die "unknown path '$path' (memory, diskE)"
          # A random step past the first checkpoint, in runs long enough to hold it.
          run_steps=$steps
          [ "$run_steps" -lt $((every + 50)) ] && run_steps=$((every + 50))
          zargs+=(--set train.steps="$run_steps")
          span=$((run_steps - 6 - every))
          [ "$span" -gt 40 ] && span=40
          first=$((every + 1 + RANDOM % span))
          mpi_env=() phase=random
          if [ "$placement" = phase ]; then
            np=5
            [ "$path" = memory ] || np=4
            phase=${PHASES[$(((k - 1) % np))]}
            mpi_env=(-x "ZT_FAULT_STOP_AT=$first:$phase:$((RANDOM % world))")
          fi
          scripts/supervise.sh --max-restarts 2 --log "$dir/attempts.jsonl" --linger 10 -- \
            "${C[@]}" run --timeout 900 -- "${mpi_env[@]}" "$ZT_BIN" train "${zargs[@]}" >"$dir/job.log" 2>&1 &
          sup=$!
          node="" victim=""
          if [ "$placement" = phase ]; then
            while kill -0 "$sup" 2>/dev/null; do
              read -r node victim <<<"$(stopped_rank)"
              [ -n "$victim" ] && break
              sleep 0.02
            done
            if [ -z "$victim" ]; then
              echo "$sys $model $kind $path $k: no rank stopped at $first:$phase; trial skipped" >&2
              wait "$sup"
              continue
            fi
          else
            while [ "$(records "$dir/run/metrics.jsonl")" -lt "$first" ] && kill -0 "$sup" 2>/dev/null; do sleep 0.02; done
            sleep "0.0$((RANDOM % 10))$((RANDOM % 10))"
          fi
          # The moment the signal went out: after kill(1) returns, or as kill-node prints it.
          case "$kind" in
            rank)
              if [ -z "$victim" ]; then
                node=$((RANDOM % nodes))
                pids=($(ranks_on "$node"))
                if [ ${#pids[@]} = 0 ]; then  # the job is not running there now (ended, or restarting)
                  echo "$sys $model $kind $path $k: no rank on node $node to kill; trial skipped" >&2
                  wait "$sup"
                  continue
                fi
                victim=${pids[$((RANDOM % ${#pids[@]}))]}
              fi
              kill -9 "$victim"
              now=$(date +%s.%N) ;;
            node | two_nodes)
              [ -n "$node" ] || node=$((RANDOM % nodes))
              if [ "$kind" = two_nodes ]; then node="$node,$(((node + 1 + RANDOM % (nodes - 1)) % nodes))"; fi
              now=$("${C[@]}" kill-node "$node" | sed -n 's/.*SIG[A-Z]* sent at \([0-9.]*\).*/\1/p' | tail -1) ;;
          esac
          cp "$dir/run/metrics.jsonl" "$dir/metrics_at_kill.jsonl"
          printf '{"kill_unix_s": %s, "kind": "%s", "nodes": "%s", "system": "%s", "model": "%s", "path": "%s", "world": %d, "ranks_per_node": %d, "steps": %d, "kill_step": %d, "phase": "%s"}\n' \
            "$now" "$kind" "$node" "$sys" "$model" "$path" "$world" "$rpn" "$run_steps" "$first" "$phase" >"$dir/kill.json"
          wait "$sup"
          echo "$sys $model $kind $path $k: exit $?" >&2
        done
      done
    done
  done
  "${C[@]}" down >/dev/null
done
