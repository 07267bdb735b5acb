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
# The losses of metrics.jsonl, one per line, exactly as written.
losses() { grep -o '"loss":[^,]*' "$1" | cut -d: -f2; }
