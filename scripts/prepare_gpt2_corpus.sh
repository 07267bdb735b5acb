#!/usr/bin/env bash
# `make data-gpt2` (also part of `make`): the KJV of the default corpus as
# GPT-2 token shards, what the GPT-2 presets fall back to when FineWeb's
# shards are absent:
#   BUILD_DIR/data/kjv-gpt2/   train_000.bin, val_000.bin (llm.c format, uint16) and .complete
# Needs BUILD_DIR/data/kjv/kjv.txt (scripts/prepare_default_corpus.sh), the GPT-2
# vocabulary (scripts/fetch_gpt2_vocab.sh) and a build with PCRE2; without any
# of them it prints a notice and succeeds. The whole file is one document.
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build=$1
data=$build/data
out=$data/kjv-gpt2
[ -e "$out/.complete" ] && exit 0
if [ ! -e "$data/kjv/kjv.txt" ]; then
  echo "prepare_gpt2_corpus: no $data/kjv/kjv.txt (the default corpus); skipping $out"
  exit 0
fi
if [ ! -e "$data/gpt2/gpt2.tiktoken" ]; then
  echo "prepare_gpt2_corpus: no GPT-2 vocabulary ($data/gpt2/gpt2.tiktoken; see scripts/fetch_gpt2_vocab.sh); skipping $out"
  exit 0
fi
exec 9>"$data/.lock-gpt2"
flock 9
[ -e "$out/.complete" ] && exit 0
rm -rf "$data"/.kjv-gpt2.tmp.*
work=$(mktemp -d "$data/.kjv-gpt2.tmp.XXXXXX")
trap 'rm -rf "$work"' EXIT
if ! "$build/zerotrain" prepare --input "$data/kjv/kjv.txt" --out "$work/kjv-gpt2" --tokenizer gpt2 \
    >"$work/log" 2>&1; then
  echo "prepare_gpt2_corpus: no GPT-2 corpus ($(tail -1 "$work/log")); the GPT-2 presets need FineWeb's shards then"
  exit 0
fi
sed "s|$work/kjv-gpt2|$out|g" "$work/log"
touch "$work/kjv-gpt2/.complete"
rm -rf "$out"
mv "$work/kjv-gpt2" "$out"
