#!/usr/bin/env bash
# Builds the default training corpus, the King James Bible (Debian's bible-kjv):
#   BUILD_DIR/data/kjv/       byte-level shards (data.tokenizer = byte), kjv.txt
#                             (the text, one verse per line) and .complete
#   BUILD_DIR/data/kjv-bpe/   a 1024-token sentencepiece BPE (tokenizer.model) and
#                             its shards: what configs/tiny.yaml trains on; made
#                             only where zerotrain was built with sentencepiece
# Safe to run from parallel makes: the work happens under a lock, in a
# temporary directory that is renamed into place, and a finished corpus is
# left alone. Without `bible` (as on the GPU machine) it prints a notice and
# succeeds, so the build does not depend on the package.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build=$1
data=$build/data
out=$data/kjv
bpe=$data/kjv-bpe
# The BPE corpus, from the byte corpus's text; skipped without sentencepiece.
make_bpe() {
  [ -e "$bpe/.complete" ] && return 0
  rm -rf "$data"/.kjv-bpe.tmp.*
  local w
  w=$(mktemp -d "$data/.kjv-bpe.tmp.XXXXXX")
  if ! "$build/zerotrain" prepare --input "$out/kjv.txt" --out "$w/bpe" --tokenizer bpe --vocab 1024 \
      >"$w/log" 2>&1; then
    echo "prepare_default_corpus: no BPE corpus ($(tail -1 "$w/log")); configs/tiny.yaml needs it," \
      "or run it with --set data.tokenizer=byte --set model.vocab_size=256 and data.train/val in $out"
    rm -rf "$w"
    return 0
  fi
  sed "s|$w/bpe|$bpe|g" "$w/log"
  touch "$w/bpe/.complete"
  rm -rf "$bpe"
  mv "$w/bpe" "$bpe"
  rm -rf "$w"
}
[ -e "$out/.complete" ] && [ -e "$bpe/.complete" ] && exit 0

if ! command -v bible >/dev/null 2>&1; then
  echo "prepare_default_corpus: 'bible' (package bible-kjv) is not installed; skipping the default corpus $out"
  exit 0
fi
if [ ! -x "$build/zerotrain" ]; then
  echo "prepare_default_corpus: $build/zerotrain not found; build it first (make)" >&2
  exit 1
fi

mkdir -p "$data"
exec 9>"$data/.lock"
flock 9
if [ -e "$out/.complete" ]; then  # the byte corpus exists (or another make finished it)
  make_bpe
  exit 0
fi

rm -rf "$data"/.kjv.tmp.*  # left by killed runs; under the lock none is in use
work=$(mktemp -d "$data/.kjv.tmp.XXXXXX")
trap 'rm -rf "$work"' EXIT

# `bible -l1000` prints, per chapter, a blank line, a heading such as
# "1 Samuel 3", a blank line, then one verse per line as two spaces, the verse
# number, a space and the text (1000 columns: no verse is wrapped). Keep the
# verse text only, without trailing blanks.
bible -l1000 'Gen1:1-Rev22:21' | sed -n -E 's/^  [0-9]+ (.*[^[:space:]])[[:space:]]*$/\1/p' >"$work/kjv.txt"
verses=$(wc -l <"$work/kjv.txt")
if [ "$verses" -ne 31102 ]; then
  echo "prepare_default_corpus: expected the 31102 verses of the KJV from 'bible', got $verses lines; output format changed?" >&2
  exit 1
fi

# prepare reports the paths it wrote; show them as they will be after the rename.
"$build/zerotrain" prepare --input "$work/kjv.txt" --out "$work/kjv" --tokenizer byte | sed "s|$work/kjv|$out|g"
mv "$work/kjv.txt" "$work/kjv/kjv.txt"
touch "$work/kjv/.complete"
rm -rf "$out"  # an unfinished directory from an older, interrupted layout
mv "$work/kjv" "$out"
make_bpe
