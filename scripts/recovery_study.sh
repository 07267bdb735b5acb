#!/usr/bin/env bash
# What a failure costs, measured on emulated clusters (docs/recovery.md,
# "Measured failures"): for each system, model, failure kind and recovery
# path, TRIALS runs under scripts/supervise.sh, each killed once at a random
# moment of a random step after it has trained a few steps, then recovered.
#
#   scripts/recovery_study.sh --out DIR [--trials N] [--systems "4x1 2x2 2x4"]
#       [--models "tiny cpu_base"] [--kinds "rank node two_nodes"]
#       [--paths "memory disk10"] [--steps S] [--link RATE]
#
# Every run is MiCS stage 3 with shard groups of one node (so every node holds
# a whole copy; on N x 1, groups of two ranks) and checkpoints every 10 steps.
# Paths: memory = train.recovery: memory (snapshots every step; the disk
# checkpoint is the last resort); diskE = no snapshots, checkpoints every E
# steps: --recover falls back to the newest checkpoint. Runs are killed
# after step 11, so a checkpoint always exists; a longer checkpoint interval's
# cost follows from disk10's measured parts (scripts/recovery_summary.py). Kinds: rank = kill -9
# of one random rank; node = cluster.sh kill-node of one random node (its
# processes and its snapshot store); two_nodes = two at once.
# Each trial writes DIR/SYSTEM/MODEL/KIND-PATH-K/ (the run, the supervisor's
# attempts.jsonl, kill.json); scripts/recovery_summary.py DIR turns them into
# the tables. The machine should be otherwise idle: times are wall clock.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "recovery_study.sh: $*" >&2; exit 2; }
out="" trials=3 systems="4x1 2x2 2x4" models="tiny cpu_base" kinds="rank node two_nodes"
paths="memory disk10" steps=120 link=1gbit
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
    *) die "unknown option '$1'" ;;
  esac
done
[ -n "$out" ] || die "--out DIR is required"
[[ "$trials" =~ ^[1-9][0-9]*$ ]] || die "--trials: expected a count, got '$trials'"
[[ "$steps" =~ ^[1-9][0-9]*$ ]] && [ "$steps" -ge 20 ] || die "--steps: expected at least 20, got '$steps'"
ZT_BIN=${ZT_BIN:-$here/build/zerotrain}
ZT_DATA_DIR=${ZT_DATA_DIR:-$here/build/data/kjv}
[ -x "$ZT_BIN" ] || die "no zerotrain at $ZT_BIN (make, or set ZT_BIN)"
P=zrs-
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
ranks_on() { for p in $(ip netns pids "${P}n$1" 2>/dev/null); do [ "$(cat /proc/"$p"/comm 2>/dev/null)" = zerotrain ] && echo "$p"; done; }
records() { [ -f "$1" ] && wc -l <"$1" || echo 0; }

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
          rm -rf "$dir" && mkdir -p "$dir"
          zargs=("${margs[@]}" "${DATA[@]}" --set train.steps="$steps" --set zero.stage=3
            --set zero.mics_shard_size="$shard" --set train.global_batch_tokens=$((world * $(
              [ "$model" = tiny ] && echo 128 || echo 512)))
            --run-dir "$dir/run")
          case "$path" in
            memory) zargs+=(--set train.recovery=memory --set train.checkpoint_every=10) ;;
            disk*) zargs+=(--set train.recovery=none --set train.checkpoint_every="${path#disk}") ;;
            *) die "unknown path '$path' (memory, diskE)" ;;
          esac
          scripts/supervise.sh --max-restarts 2 --log "$dir/attempts.jsonl" --linger 10 -- \
            "${C[@]}" run --timeout 600 -- "$ZT_BIN" train "${zargs[@]}" >"$dir/job.log" 2>&1 &
          sup=$!
          # A random step past the first checkpoint, and a random moment in it.
          first=$((11 + RANDOM % (steps - 17)))
          while [ "$(records "$dir/run/metrics.jsonl")" -lt "$first" ] && kill -0 "$sup" 2>/dev/null; do sleep 0.02; done
          sleep "0.0$((RANDOM % 10))$((RANDOM % 10))"
          # The moment the signal went out: after kill(1) returns, or as kill-node prints it.
          case "$kind" in
            rank)
              node=$((RANDOM % nodes))
              pids=($(ranks_on "$node"))
              if [ ${#pids[@]} = 0 ]; then  # the job is not running there now (ended, or restarting)
                echo "$sys $model $kind $path $k: no rank on node $node to kill; trial skipped" >&2
                wait "$sup"
                continue
              fi
              kill -9 "${pids[$((RANDOM % ${#pids[@]}))]}"
              now=$(date +%s.%N) ;;
            node | two_nodes)
              node=$((RANDOM % nodes))
              if [ "$kind" = two_nodes ]; then node="$node,$(((node + 1 + RANDOM % (nodes - 1)) % nodes))"; fi
              now=$("${C[@]}" kill-node "$node" | sed -n 's/.*SIG[A-Z]* sent at \([0-9.]*\).*/\1/p' | tail -1) ;;
          esac
          cp "$dir/run/metrics.jsonl" "$dir/metrics_at_kill.jsonl"
          printf '{"kill_unix_s": %s, "kind": "%s", "nodes": "%s", "system": "%s", "model": "%s", "path": "%s", "world": %d, "ranks_per_node": %d, "steps": %d}\n' \
            "$now" "$kind" "$node" "$sys" "$model" "$path" "$world" "$rpn" "$steps" >"$dir/kill.json"
          wait "$sup"
          echo "$sys $model $kind $path $k: exit $?" >&2
        done
      done
    done
  done
  "${C[@]}" down >/dev/null
done
