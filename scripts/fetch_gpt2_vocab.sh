#!/usr/bin/env bash
# Fetches GPT-2's vocabulary once, from the package registry, without which
# zerotrain's GPT-2 tokenizer (data.tokenizer: gpt2) cannot run:
#   BUILD/data/gpt2/gpt2.tiktoken  OpenAI's r50k_base ranks, the one file kept
#                                  from the openai-whisper 20250625 sdist on
#                                  PyPI (MIT), checked against tiktoken's sha256
#   BUILD/pydeps/                  tiktoken (optional): the independent
#                                  reference the GPT-2 tests and
#                                  scripts/bench_tokenizer.sh compare against
# Without network access it prints one line saying what to do and succeeds;
# the GPT-2 tests then report SKIPPED. A failed download is not retried for a
# day (BUILD/data/gpt2/.fetch-failed; remove it to retry at once), so offline
# makes stay fast. Safe under parallel makes (a lock, and files renamed into
# place only when complete).
set -u
if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build=$1
dir=$build/data/gpt2
dest=$dir/gpt2.tiktoken
sha=306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930
sdist=openai_whisper-20250625
py=/usr/bin/python3
failed=$dir/.fetch-failed
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore PIP_RETRIES=1 PIP_TIMEOUT=20

hash_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$sha" ]; }
have_tiktoken() { [ -f "$build/pydeps/tiktoken/__init__.py" ]; }
hash_ok "$dest" && have_tiktoken && exit 0
if [ -e "$failed" ] && [ -z "$(find "$failed" -mmin +1440 2>/dev/null)" ]; then
  hash_ok "$dest" ||
    echo "fetch_gpt2_vocab: $(head -1 "$failed") (not retried within a day; rm $failed to retry)"
  exit 0
fi

mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
rm -f "$failed"
work=$(mktemp -d "$dir/.fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT

if ! hash_ok "$dest"; then
  if timeout 300 "$py" -m pip download -q --no-deps --no-binary :all: openai-whisper==20250625 \
      -d "$work" >"$work/log" 2>&1 &&
     tar --no-same-owner -xzf "$work/$sdist.tar.gz" -C "$work" "$sdist/whisper/assets/gpt2.tiktoken" 2>>"$work/log"; then
    if hash_ok "$work/$sdist/whisper/assets/gpt2.tiktoken"; then
      mv "$work/$sdist/whisper/assets/gpt2.tiktoken" "$dest"
      echo "fetch_gpt2_vocab: wrote $dest (GPT-2's vocabulary from openai-whisper 20250625 on PyPI, sha256 verified)"
    else
      echo "fetch_gpt2_vocab: gpt2.tiktoken in openai-whisper 20250625 does not have sha256 $sha; not using it"
    fi
  else
    echo "cannot fetch GPT-2's vocabulary from PyPI (pip download openai-whisper==20250625:" \
      "$(grep -v '^ *$' "$work/log" | tail -1)); the GPT-2 tokenizer needs $dest: rerun make with network" \
      "access, or copy gpt2.tiktoken (sha256 $sha) there" >>"$failed"
    echo "fetch_gpt2_vocab: $(cat "$failed")"
  fi
fi

if ! have_tiktoken; then
  if timeout 300 "$py" -m pip install -q --target "$work/pydeps" tiktoken==0.14.0 >"$work/log" 2>&1; then
    rm -rf "$build/pydeps"
    mv "$work/pydeps" "$build/pydeps"
  else
    echo "optional tiktoken 0.14.0 (the reference for the GPT-2 tests and benchmark) unavailable" \
      "($(grep -v '^ *$' "$work/log" | tail -1)); those comparisons will say SKIPPED" >>"$failed"
    echo "fetch_gpt2_vocab: $(tail -1 "$failed")"
  fi
fi
exit 0
