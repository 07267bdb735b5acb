# GPT-2 through the command line: tokenize round trips (byte and gpt2, any
# bytes), prepare --tokenizer gpt2 on a folder, a tiny model trained on those
# shards samples GPT-2 text, and the GPT-2 preset falls back to the KJV's
# GPT-2 shards. Without the vocabulary or PCRE2 the GPT-2 parts say SKIPPED.
. "$(dirname "$0")/../support/e2e_lib.sh"
tok() { "$ZT_BIN" tokenize "$@"; }
# Runs a command that must fail with exit 2 and one line containing $1.
fails_with() {
  local want=$1 out rc
  shift
  out=$("$@" 2>&1 </dev/null); rc=$?
  [ "$rc" -eq 2 ] || fail "expected exit 2 from $*, got $rc: $out"
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "not one line: $out"
  printf '%s' "$out" | grep -qF -- "$want" || fail "expected '$want' in: $out"
}

head -c 3000 /dev/urandom >"$WORK/bytes"
tok --tokenizer byte <"$WORK/bytes" | tok --tokenizer byte --decode >"$WORK/bytes.back" || fail "byte round trip"
cmp -s "$WORK/bytes" "$WORK/bytes.back" || fail "byte tokenizer round trip differs"
out=$(printf '1 2 x' | "$ZT_BIN" tokenize --tokenizer byte --decode 2>&1); [ $? -eq 2 ] || fail "bad id: $out"
printf '%s' "$out" | grep -qF "standard input word 3 ('x') is not a token id" || fail "bad id message: $out"
fails_with "the byte tokenizer has no end-of-text token" tok --tokenizer byte --eot
fails_with "--tokenizer byte|gpt2|FILE.tiktoken|MODEL.model is required" tok
fails_with "--decode reads ids" tok --tokenizer byte --decode --pieces

if ! out=$(printf 'Hello world' | tok --tokenizer gpt2 2>&1); then
  echo "SKIPPED: gpt2 parts ($out)"
  echo "PASS gpt2_pipeline (byte parts only)"
  exit 0
fi
[ "$out" = "15496 995" ] || fail "Hello world: '$out'"
[ "$(printf 'Hello world' | tok --tokenizer gpt2 --eot)" = "50256 15496 995" ] || fail "--eot"
[ "$(printf ' world' | tok --tokenizer gpt2 --pieces)" = "$(printf '995\t\xc4\xa0world')" ] || fail "--pieces"
{ head -c 100000 "$ZT_DATA_DIR/kjv.txt"; printf '\xff\xfe<|endoftext|>\r\n  \xe2\x82 '; cat "$WORK/bytes"; } >"$WORK/mixed"
tok --tokenizer gpt2 <"$WORK/mixed" >"$WORK/mixed.ids" || fail "encode mixed"
tok --tokenizer gpt2 --decode <"$WORK/mixed.ids" >"$WORK/mixed.back" || fail "decode mixed"
cmp -s "$WORK/mixed" "$WORK/mixed.back" || fail "gpt2 round trip differs"
out=$(printf '50257' | "$ZT_BIN" tokenize --tokenizer gpt2 --decode 2>&1); [ $? -eq 2 ] || fail "id 50257 accepted"
printf '%s' "$out" | grep -qF "id 50257 at index 0 is out of range for vocab size 50257" || fail "range message: $out"

# A folder of three files: three documents, each <|endoftext|> + its ids.
mkdir -p "$WORK/corpus/sub"
head -c 300000 "$ZT_DATA_DIR/kjv.txt" >"$WORK/corpus/a.txt"
tail -c 200000 "$ZT_DATA_DIR/kjv.txt" >"$WORK/corpus/sub/b.txt"
cp "$WORK/mixed" "$WORK/corpus/sub/c.bin"
"$ZT_BIN" prepare --input "$WORK/corpus" --out "$WORK/shards" --tokenizer gpt2 --threads 2 \
  >"$WORK/prepare.log" 2>&1 || fail "prepare: $(tail -1 "$WORK/prepare.log")"
grep -q "^encoded 3 files, 3 documents" "$WORK/prepare.log" || fail "prepare summary: $(head -1 "$WORK/prepare.log")"
want=0
for f in "$WORK/corpus/a.txt" "$WORK/corpus/sub/b.txt" "$WORK/corpus/sub/c.bin"; do
  want=$((want + 1 + $(tok --tokenizer gpt2 <"$f" | wc -w)))
done
got=$(awk '/^wrote .* tokens \(uint16\)$/ { n += $(NF - 2) } END { print n }' "$WORK/prepare.log")
[ "$got" -eq "$want" ] || fail "shards hold $got tokens, expected $want"
grep -q "^use: data.train=$WORK/shards/train_\*.bin data.val=$WORK/shards/val_\*.bin data.tokenizer=gpt2$" \
  "$WORK/prepare.log" || fail "use line: $(tail -1 "$WORK/prepare.log")"

# A tiny model on those shards samples GPT-2 text; `sample` continues a prompt.
TINY_GPT2=(--set "data.train=$WORK/shards/train_*.bin" --set "data.val=$WORK/shards/val_*.bin"
           --set data.tokenizer=gpt2 --set model.vocab_size=50304 --set model.n_layer=1
           --set model.n_embd=32 --set model.n_head=2 --set model.seq_len=32 --set train.micro_batch=2
           --set train.global_batch_tokens=64 --set train.eval_batches=1 --set train.sample_tokens=12)
"$ZT_BIN" train configs/tiny.yaml --run-dir "$WORK/run" "${TINY_GPT2[@]}" --set train.steps=3 \
  --set train.eval_every=3 --set train.sample_every=3 --set train.checkpoint_every=3 >"$WORK/train.log" 2>&1 ||
  fail "train on GPT-2 shards: $(tail -2 "$WORK/train.log")"
grep -A1 -- "---- sample at step 3 ----" "$WORK/train.log" | tail -1 | grep -q . || fail "no sample"
grep -A1 -- "---- sample at step 3 ----" "$WORK/train.log" | grep -qF "<|endoftext|>" && fail "the sample shows its start token"
txt=$("$ZT_BIN" sample --checkpoint "$WORK/run/checkpoints/step_00000003" --prompt "And God said" --tokens 5) ||
  fail "sample"
case "$txt" in "And God said"*) ;; *) fail "sample does not continue the prompt: $txt" ;; esac
fails_with "has 50257 tokens, more than model.vocab_size 256" "$ZT_BIN" train configs/tiny.yaml \
  --run-dir "$WORK/r" "${SMALL[@]}" --set data.tokenizer=gpt2 --set train.sample_every=1

# The 124M preset, shrunk, runs from the KJV's GPT-2 shards when FineWeb's are absent.
if [ -e build/data/kjv-gpt2/.complete ] && [ ! -e data/fineweb10B ]; then
  "$ZT_BIN" train configs/gpt2-124m.yaml --run-dir "$WORK/g" --set model.n_layer=1 --set model.n_embd=32 \
    --set model.n_head=2 --set model.seq_len=32 --set train.micro_batch=2 --set train.global_batch_tokens=64 \
    --set train.steps=2 --set train.eval_every=2 --set train.eval_batches=1 --set train.sample_every=2 \
    --set train.sample_tokens=8 --set train.checkpoint_every=0 >"$WORK/g.log" 2>&1 ||
    fail "gpt2-124m preset: $(tail -2 "$WORK/g.log")"
  grep -qF "data.train: data/fineweb10B/fineweb_train_*.bin matches no files; reading data.train_fallback build/data/kjv-gpt2/train_*.bin instead" \
    "$WORK/g.log" || fail "no fallback notice"
  grep -q "^step     2/2" "$WORK/g.log" || fail "preset did not step"
else
  echo "SKIPPED: preset fallback (no build/data/kjv-gpt2, or data/fineweb10B exists)"
fi
echo "PASS gpt2_pipeline ($got tokens in the folder's shards)"
