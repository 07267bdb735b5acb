# Inputs that are not what they claim: a FIFO, a device or a directory as the
# config, a shard (through a data.train glob) or a model file; a config past the
# 1 MiB limit; an empty config. Each is one line and exit 2, with no run
# directory created. Every command runs under `timeout 300` (far above a normal run even
# on a loaded machine), so a read that blocks fails the test instead of hanging it.
. "$(dirname "$0")/../support/e2e_lib.sh"
FAST=("${SMALL[@]}" --set train.global_batch_tokens=256 --set train.steps=1)
mkfifo "$WORK/fifo.yaml" "$WORK/fifo.bin" "$WORK/fifo.json"
mkdir "$WORK/dir.yaml" "$WORK/shards"
head -c $((2 << 20)) /dev/zero | tr '\0' '#' >"$WORK/huge.yaml"
cp "$ZT_DATA_DIR"/val_000.bin "$WORK/shards/train_000.bin"
mkfifo "$WORK/shards/train_001.bin"

EXPECT_TIMEOUT=300
RUN=(--run-dir "$WORK/run" "${FAST[@]}")

expect_error "FIFO config" "$WORK/fifo.yaml: cannot read config file: it is a named pipe (FIFO)" \
  "$ZT_BIN" train "$WORK/fifo.yaml" "${RUN[@]}"
expect_error "/dev/zero config" "/dev/zero: cannot read config file: it is a character device" \
  "$ZT_BIN" train /dev/zero "${RUN[@]}"
expect_error "directory config" "$WORK/dir.yaml: cannot read config file: it is a directory" \
  "$ZT_BIN" train "$WORK/dir.yaml" "${RUN[@]}"
expect_error "2 MiB config" "config file is 2097152 bytes, more than the limit of 1048576" \
  "$ZT_BIN" train "$WORK/huge.yaml" "${RUN[@]}"
expect_error "glob matching a FIFO" "$WORK/shards/train_001.bin: cannot read token shard: it is a named pipe" \
  "$ZT_BIN" train configs/tiny.yaml "${RUN[@]}" --set "data.train=$WORK/shards/train_*.bin"
expect_error "FIFO model file" "$WORK/fifo.bin: cannot read model file: it is a named pipe" \
  "$ZT_BIN" train configs/tiny.yaml "${RUN[@]}" --init-from "$WORK/fifo.bin"
expect_error "/dev/zero model file" "/dev/zero: cannot read model file: it is a character device" \
  "$ZT_BIN" eval configs/tiny.yaml "${FAST[@]}" --init-from /dev/zero
expect_error "FIFO eval config" "cannot read config file: it is a named pipe" \
  "$ZT_BIN" eval "$WORK/fifo.yaml"
expect_error "FIFO ds_config" "$WORK/fifo.json: cannot read DeepSpeed config: it is a named pipe" \
  "$ZT_BIN" train configs/tiny.yaml "${RUN[@]}" --deepspeed "$WORK/fifo.json"
expect_error "FIFO network file" "$WORK/fifo.json: cannot read network file: it is a named pipe" \
  "$ZT_BIN" plan configs/tiny.yaml --world 2 --network "$WORK/fifo.json" --compute-ms 1,1
: >"$WORK/empty.yaml"
expect_error "empty config" "zerotrain: $WORK/empty.yaml is empty (no key set)" \
  "$ZT_BIN" train "$WORK/empty.yaml" "${RUN[@]}"
[ ! -e "$WORK/run" ] || fail "a run directory was created for bad input"
echo "PASS hostile_inputs"
