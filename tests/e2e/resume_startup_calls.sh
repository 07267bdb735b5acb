#!/usr/bin/env bash
# A resumed or recovered run issues DeepSpeed's start-up calls as a fresh run
# does: deepspeed.initialize (the engine's parameter broadcast; stage 3's
# zero.Init and its gathers and barriers) runs before a script can call the
# engine's load_checkpoint. Each run's comm trace holds them as step -1,
# phase init, and summary.json counts them in comm.startup. Under MiCS the
# optimizer's start-up gathers run over the shard group.
# The small model has 28 tensors of 120,576 elements in all: wte 16384,
# wpe 4096, per layer 64+64 (ln_1) + 12288+192 (attn) + 4096+64 (proj)
# + 64+64 (ln_2) + 16384+256 (fc) + 16384+64 (fc proj) = 49,984, ln_f 64+64.
. "$(dirname "$0")/../support/e2e_lib.sh"
export OMPI_MCA_btl_vader_single_copy_mechanism=none
ARGS=("${SMALL[@]}" --set train.checkpoint_every=2 --set system.comm_trace=true)

# The start-up lines of a run's trace on rank $2, "op dtype count root" each.
startup_lines() {
  grep '"step":-1,"phase":"init"' "$1/comm_trace_rank$2.jsonl" |
    sed 's/.*"op":"\([a-z_]*\)","count":\([0-9]*\),"dtype":"\([a-z0-9]*\)".*"root":\(-*[0-9]*\).*/\1 \3 \2 \4/'
}
# summary.json's comm.startup: "broadcast calls, all_gather calls, barriers".
startup_summary() {
  python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))["comm"]["startup"]
print(s["broadcast"]["calls"], s["all_gather"]["calls"], s["barriers"])' "$1/summary.json"
}
# check RUN WHAT BROADCASTS BCAST_DTYPE BCAST_ELEMENTS GATHERS BARRIERS
check() {
  local run=$1 what=$2 r lines
  for r in 0 1; do
    lines=$(startup_lines "$run" "$r")
    [ "$(grep -c '^broadcast ' <<<"$lines")" = "$3" ] || fail "$what, rank $r: broadcasts at start-up: $(grep -c '^broadcast ' <<<"$lines") (expected $3)"
    grep '^broadcast ' <<<"$lines" | grep -qv "^broadcast $4 [0-9]* 0$" && fail "$what, rank $r: a start-up broadcast not of $4 from rank 0"
    [ "$(grep '^broadcast ' <<<"$lines" | awk '{s += $3} END {print s}')" = "$5" ] ||
      fail "$what, rank $r: start-up broadcast elements $(grep '^broadcast ' <<<"$lines" | awk '{s += $3} END {print s}') (expected $5)"
  done
  [ "$(startup_summary "$run")" = "$3 $6 $7" ] ||
    fail "$what: summary.json comm.startup '$(startup_summary "$run")' (expected '$3 $6 $7')"
}

# Stage 3, 0.19.8: both passes (engine, zero.Init) as bytes, 28 gathers, 3 barriers.
S3=("${ARGS[@]}" --set zero.stage=3 --set zero.deepspeed_version=0.19.8)
mpirun -np 2 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/s3" "${S3[@]}" --set train.steps=2 \
  >"$WORK/s3_fresh.txt" 2>&1 || fail "stage 3 fresh run: $(tail -2 "$WORK/s3_fresh.txt")"
check "$WORK/s3" "stage 3 fresh run" 56 uint8 $((2 * 4 * 120576)) 28 3
startup_lines "$WORK/s3" 0 >"$WORK/s3_fresh_startup.txt"
mpirun -np 2 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/s3" --resume "${S3[@]}" --set train.steps=4 \
  >"$WORK/s3_resume.txt" 2>&1 || fail "stage 3 resume: $(tail -2 "$WORK/s3_resume.txt")"
grep -q "resumed from .*step_00000002" "$WORK/s3_resume.txt" || fail "stage 3 did not resume"
check "$WORK/s3" "stage 3 resumed run" 56 uint8 $((2 * 4 * 120576)) 28 3
diff "$WORK/s3_fresh_startup.txt" <(startup_lines "$WORK/s3" 0) >/dev/null ||
  fail "stage 3: the resumed run's start-up calls differ from the fresh run's"

# Stage 2, 0.10.3: the engine's broadcast in fp32 and the optimizer's barrier;
# --recover (no snapshots: the disk checkpoint) issues them too.
S2=("${ARGS[@]}" --set zero.stage=2 --set zero.deepspeed_version=0.10.3)
mpirun -np 2 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/s2" "${S2[@]}" --set train.steps=2 \
  >"$WORK/s2_fresh.txt" 2>&1 || fail "stage 2 fresh run: $(tail -2 "$WORK/s2_fresh.txt")"
mpirun -np 2 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/s2" --recover "${S2[@]}" --set train.steps=4 \
  >"$WORK/s2_recover.txt" 2>&1 || fail "stage 2 recover: $(tail -2 "$WORK/s2_recover.txt")"
grep -q "recovered step 2 from disk checkpoint" "$WORK/s2_recover.txt" || fail "stage 2 did not recover"
check "$WORK/s2" "stage 2 recovered run" 28 fp32 120576 0 1
# MiCS at W = 4, shard groups of 2 (0.14.4, traced: the optimizer's start-up gathers run over
# the shard group): every rank's 28 start-up gathers have group [2,1] and half of each tensor,
# 120,576 / 2 elements in all; resumed, the same.
MICS=("${ARGS[@]}" --set zero.stage=3 --set zero.mics_shard_size=2 --set zero.deepspeed_version=0.14.4)
mics_gathers() {  # run rank: "calls elements" of the start-up gathers over [2,1]
  grep '"step":-1,"phase":"init"' "$1/comm_trace_rank$2.jsonl" | grep '"op":"all_gather"' |
    grep '"group":\[2,1\]' | sed 's/.*"count":\([0-9]*\),.*/\1/' | awk '{n++; s += $1} END {print n, s}'
}
mpirun -np 4 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/mics" "${MICS[@]}" --set train.steps=2 \
  >"$WORK/mics_fresh.txt" 2>&1 || fail "MiCS fresh run: $(tail -2 "$WORK/mics_fresh.txt")"
mpirun -np 4 "$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/mics" --resume "${MICS[@]}" --set train.steps=4 \
  >"$WORK/mics_resume.txt" 2>&1 || fail "MiCS resume: $(tail -2 "$WORK/mics_resume.txt")"
grep -q "resumed from .*step_00000002" "$WORK/mics_resume.txt" || fail "MiCS did not resume"
for r in 0 1 2 3; do
  [ "$(mics_gathers "$WORK/mics" "$r")" = "28 $((120576 / 2))" ] ||
    fail "MiCS resumed run, rank $r: start-up gathers over [2,1]: '$(mics_gathers "$WORK/mics" "$r")' (expected '28 60288')"
done
[ "$(startup_summary "$WORK/mics")" = "56 28 3" ] ||
  fail "MiCS: summary.json comm.startup '$(startup_summary "$WORK/mics")' (expected '56 28 3')"
echo "PASS resume_startup_calls"
