# Every subcommand against the input layer (issue 26): each path it reads given
# as a FIFO, a directory, /dev/zero and a symbolic link loop; each numeric
# option given inf, nan, 1e400 and a negative number; each option that writes
# pointed at something unwritable, which must fail before any work; config
# errors at W = 3, from rank 0 only. Every case is exit 2 and one line naming
# the path or option, under `timeout 120` so a blocking read fails the test
# instead of hanging it. About 40 s.
. "$(dirname "$0")/../support/e2e_lib.sh"
cd "$WORK" || fail "cannot enter $WORK"
REPO=$OLDPWD
Z=$ZT_BIN
[[ $Z == /* ]] || Z=$REPO/$ZT_BIN
[[ $ZT_DATA_DIR == /* ]] || ZT_DATA_DIR=$REPO/$ZT_DATA_DIR
FAST=(--set "data.train=$ZT_DATA_DIR/train_*.bin" --set "data.val=$ZT_DATA_DIR/val_*.bin"
      --set data.tokenizer=byte --set model.vocab_size=256 --set model.n_layer=1
      --set model.n_embd=32 --set model.seq_len=32 --set train.micro_batch=1
      --set train.global_batch_tokens=96 --set train.steps=1 --set train.eval_every=0
      --set train.sample_every=0 --set train.checkpoint_every=0)
TINY=$REPO/configs/tiny.yaml
NET=$REPO/configs/networks/h100_ib400_8gpu.json
DS=$REPO/configs/deepspeed/zero2.json
mkfifo fifo
mkdir dir
ln -s loop loop
echo "some text" >text.txt
EXPECT_TIMEOUT=120

# The kind each special file is named by.
kind_of() {
  case $1 in
    fifo) echo "named pipe (FIFO)" ;;
    dir) echo "directory" ;;
    /dev/zero) echo "character device" ;;
    loop) echo "symbolic link loop" ;;
  esac
}

# ---- every path a command reads
for p in fifo dir /dev/zero loop; do
  k=$(kind_of "$p")
  expect_error "train CONFIG=$p" "$k" "$Z" train "$p" --run-dir run
  expect_error "train --deepspeed $p" "$k" "$Z" train "$TINY" "${FAST[@]}" --deepspeed "$p" --run-dir run
  expect_error "train --init-from $p" "$k" "$Z" train "$TINY" "${FAST[@]}" --init-from "$p" --run-dir run
  expect_error "eval CONFIG=$p" "$k" "$Z" eval "$p"
  expect_error "eval --init-from $p" "$k" "$Z" eval "$TINY" "${FAST[@]}" --init-from "$p"
  expect_error "eval --hellaswag $p" "$k" "$Z" eval "$TINY" "${FAST[@]}" --hellaswag "$p"
  expect_error "plan CONFIG=$p" "$k" "$Z" plan "$p" --world 2
  expect_error "plan --deepspeed $p" "$k" "$Z" plan "$TINY" --world 2 --deepspeed "$p"
  expect_error "plan --network $p" "$k" "$Z" plan "$TINY" --world 2 --network "$p" --compute-ms 1,1
  expect_error "plan --compute-from $p" "$k" "$Z" plan "$TINY" --world 2 --network "$NET" --compute-from "$p"
  expect_error "explain DS=$p" "$k" "$Z" explain "$p" --world 2 --model tiny
  expect_error "explain --config $p" "$k" "$Z" explain "$DS" --world 2 --config "$p"
  expect_error "report --network $p" "$k" "$Z" report dir --out out --network "$p"
  expect_error "tokenize --tokenizer $p.tiktoken" "" "$Z" tokenize --tokenizer "$p" </dev/null
  [ "$p" = dir ] || expect_error "prepare --input $p" "$k" "$Z" prepare --input "$p" --out "prep_$RANDOM" --tokenizer byte
  [ -z "$(ls -A . | grep -v -e '^fifo$' -e '^dir$' -e '^loop$' -e '^text.txt$')" ] ||
    fail "after $p: something was left behind: $(ls -A)"
done
# sample and eval --checkpoint name checkpoint directories.
for p in fifo /dev/zero; do
  expect_error "sample --checkpoint $p" "$(kind_of "$p")" "$Z" sample --checkpoint "$p"
  expect_error "eval --checkpoint $p" "$(kind_of "$p")" "$Z" eval "$TINY" "${FAST[@]}" --checkpoint "$p"
done
# report's summary.json as a FIFO, a directory, a truncated file.
for k in fifo dir truncated; do
  rm -rf runs && mkdir -p runs/a
  case $k in
    fifo) mkfifo runs/a/summary.json; want="named pipe (FIFO)" ;;
    dir) mkdir runs/a/summary.json; want="a directory" ;;
    truncated) printf '{"world_size": 4, "steps": [' >runs/a/summary.json; want="a truncated summary.json" ;;
  esac
  expect_error "report with a $k summary.json" "$want" "$Z" report runs --no-plots
done
rm -rf runs
# prepare --input DIR with a link loop and a second way to the same file: each file once.
mkdir -p corpus/a && for i in $(seq 1 40); do echo "In the beginning God created the heaven and the earth, verse $i."; echo; done >corpus/a/one.txt
ln -s .. corpus/a/up && ln -s a corpus/b && ln -s a/one.txt corpus/two.txt
if [ -f "$REPO/${ZT_BIN%/zerotrain}/data/gpt2/gpt2.tiktoken" ] || [ -f "$(dirname "$Z")/data/gpt2/gpt2.tiktoken" ]; then
  out=$(timeout 120 "$Z" prepare --input corpus --out prep_loop --tokenizer gpt2 --val-fraction 0.5 2>&1) ||
    fail "prepare over a looped folder: $out"
  printf "%s" "$out" | grep -q "encoded 1 file," || fail "prepare over a looped folder: not one file: $out"
else
  echo "SKIPPED gpt2 folder check: no GPT-2 vocabulary"
fi

# ---- numbers: non-finite, out of range, negative, inexact
for v in inf nan 1e400 -1 1.5; do
  expect_error "plan --world $v" "--world expects an integer" "$Z" plan "$TINY" --world "$v"
  expect_error "plan --ranks-per-node $v" "--ranks-per-node expects an integer" "$Z" plan "$TINY" --world 2 --ranks-per-node "$v"
  expect_error "sample --tokens $v" "--tokens expects an integer" "$Z" sample --checkpoint dir --tokens "$v"
  expect_error "sample --top-k $v" "--top-k expects an integer" "$Z" sample --checkpoint dir --top-k "$v"
  expect_error "sample --seed $v" "--seed expects an integer" "$Z" sample --checkpoint dir --seed "$v"
  expect_error "eval --batches $v" "--batches expects an integer" "$Z" eval "$TINY" "${FAST[@]}" --batches "$v"
  expect_error "commbench --iters $v" "--iters expects an integer" "$Z" commbench --iters "$v"
  expect_error "commbench --warmup $v" "--warmup expects an integer" "$Z" commbench --warmup "$v"
  expect_error "commbench --root $v" "--root expects an integer" "$Z" commbench --root "$v"
  expect_error "prepare --threads $v" "--threads expects an integer" "$Z" prepare --input text.txt --out p --tokenizer gpt2 --threads "$v"
  expect_error "prepare --shard-tokens $v" "--shard-tokens expects an integer" "$Z" prepare --input text.txt --out p --tokenizer byte --shard-tokens "$v"
  expect_error "train --set train.steps=$v" "train.steps" "$Z" train "$TINY" "${FAST[@]}" --set "train.steps=$v" --run-dir run
done
for v in inf nan 1e400 -1 0; do
  expect_error "sample --temperature $v" "--temperature expects a number in (0, 1e+09]" "$Z" sample --checkpoint dir --temperature "$v"
  expect_error "prepare --val-fraction $v" "--val-fraction expects a number in (0, 1)" "$Z" prepare --input text.txt --out p --tokenizer byte --val-fraction "$v"
done
for v in inf nan 1e400 -1; do
  expect_error "plan --compute-ms $v,1" "--compute-ms expects MICRO_MS,OPTIMIZER_MS" "$Z" plan "$TINY" --world 2 --network "$NET" --compute-ms "$v,1"
  expect_error "train --set train.lr=$v" "train.lr" "$Z" train "$TINY" "${FAST[@]}" --set "train.lr=$v" --run-dir run
  expect_error "commbench --max-seconds $v" "--max-seconds expects a number in [0, 86400]" "$Z" commbench --max-seconds "$v"
done
expect_error "prepare --val-fraction 1" "--val-fraction expects a number in (0, 1), got '1'" "$Z" prepare --input text.txt --out p --tokenizer byte --val-fraction 1
# JSON files: a number beyond a double, a negative delay.
printf '{"nodes": 2, "ranks_per_node": 1, "link": {"rate_bits_per_s": 1e9, "delay_us": -5}}\n' >neg.json
expect_error "cluster.json with a negative delay" "field 'delay_us': expected a number in [0, 3.6e+09], got -5" "$Z" plan "$TINY" --world 2 --network neg.json --compute-ms 1,1
printf '{"world": 2, "curves": [{"primitive": "all_reduce", "dtype": "fp32", "points": [{"bytes": 4, "time_us": 1e400}]}]}\n' >huge.json
expect_error "commbench file with 1e400" "beyond the range of a double" "$Z" plan "$TINY" --world 2 --network huge.json --compute-ms 1,1
# A commbench file measured at W = 2 on one node, asked for W = 4.
printf '{"world": 2, "ranks_per_node": 2, "curves": [{"primitive": "all_reduce", "dtype": "fp32", "points": [{"bytes": 4, "time_us": 10}]}]}\n' >w2.json
expect_error "commbench file of another layout" "measured at W = 2 with 2 ranks per node, asked for W = 4 with 4" "$Z" plan "$TINY" --world 4 --network w2.json --compute-ms 1,1
# A compute time measured for another model.
printf '{"world_size": 1, "timing": {"compute_ms_per_micro_step": 5, "optimizer_ms": 1}, "config": {"model": {"n_layer": 2, "n_head": 2, "n_embd": 64, "vocab_size": 256, "seq_len": 128}, "train": {"micro_batch": 4}}}\n' >other_model.json
expect_error "--compute-from of another model" "measured for 2 layers, 2 heads, width 64" "$Z" plan "$TINY" --world 2 --network "$NET" --compute-from other_model.json
# MiCS: a shard group that does not divide the world; a hierarchical gather on one node.
expect_error "train with mics_shard_size 2 at W = 1" "key 'zero.mics_shard_size': expected a shard group size dividing the world size 1" "$Z" train "$TINY" "${FAST[@]}" --set zero.stage=3 --set zero.mics_shard_size=2 --run-dir run
expect_error "plan with a hierarchical MiCS gather on one node" "key 'zero.mics_hierarchical_params_gather': the shard group of 2 ranks must span several nodes of 4 ranks" "$Z" plan "$TINY" --world 4 --set zero.stage=3 --set zero.mics_shard_size=2 --set zero.mics_hierarchical_params_gather=true
# Token ids: exact in the message, whatever their length.
expect_error "decode of a 21-digit id" "('123456789012345678901')" sh -c "echo 123456789012345678901 | '$Z' tokenize --tokenizer byte --decode"

# ---- options that write: refused before any work (commbench would measure for minutes)
start=$(date +%s)
expect_error "commbench --out DIR" "--out dir: it is a directory, expected a file to write" "$Z" commbench --out dir --min-bytes 4 --max-bytes 64M --iters 1000
expect_error "commbench --out in a missing directory" "does not exist" "$Z" commbench --out nowhere/x.json
expect_error "report --out FILE" "--out text.txt: it is a regular file, expected a directory" "$Z" report dir --out text.txt
expect_error "export to a directory" "dir: it is a directory, expected a file to write" "$Z" export dir --checkpoint fifo
expect_error "train --run-dir FILE" "--run-dir text.txt: it is a regular file, expected a directory" "$Z" train "$TINY" "${FAST[@]}" --run-dir text.txt
expect_error "prepare --out FILE" "text.txt: already exists" "$Z" prepare --input text.txt --out text.txt --tokenizer byte
expect_error "sweep.sh --out FILE" "--out text.txt: exists and is not a directory" "$REPO/scripts/sweep.sh" --grid "$REPO/configs/pmbs/grid_cpu_quick.txt" --out text.txt --bin "$Z"
expect_error "sweep.sh --grid FIFO" "fifo: not a regular file" "$REPO/scripts/sweep.sh" --grid fifo --out sweep_out --bin "$Z"
[ $(($(date +%s) - start)) -lt 60 ] || fail "the writing options were not checked before the work"

# ---- config errors at W = 3: rank 0 only, one line, exit 2, nothing created
for set in "zero.zero_hpz_partition_size=2" "train.global_batch_tokens=100" "zero.stagee=1" "train.lr=inf"; do
  want=${set%%=*}
  out=$(timeout 100 mpirun -q -np 3 "$Z" train "$TINY" "${FAST[@]}" --set zero.stage=3 --set "$set" --run-dir run3 2>&1 >/dev/null); rc=$?
  [ "$rc" -eq 2 ] || fail "W = 3, $set: exit $rc (expected 2): $out"
  # mpirun adds its own notice of a non-zero exit; ours is the one zerotrain line.
  [ "$(printf '%s\n' "$out" | grep -c '^zerotrain:')" -eq 1 ] || fail "W = 3, $set: not one line from rank 0: $out"
  printf '%s' "$out" | grep '^zerotrain:' | grep -qF -- "$want" || fail "W = 3, $set: '$out' lacks '$want'"
  printf '%s' "$out" | grep -q MPI_ABORT && fail "W = 3, $set: ended through MPI_Abort: $out"
  expect_error_count=$((expect_error_count + 1))
  [ ! -e run3 ] || fail "W = 3, $set: created its run directory"
done
echo "bad_inputs_every_command: $expect_error_count cases, each exit 2 and one line"
