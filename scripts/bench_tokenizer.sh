#!/usr/bin/env bash
# GPT-2 encoding speed on the KJV: `zerotrain prepare --tokenizer gpt2` (read,
# pre-tokenize, merge, write shards) on one thread and on every core, beside
# tiktoken 0.14.0 (Rust; encode_ordinary, and encode_ordinary_batch on every
# core) when the set-up installed it into BUILD/pydeps. The text is the KJV
# repeated REPEAT times (default 8, 33 MB) as one document; each row is the
# best of RUNS runs (default 3). MB/s = input bytes / wall seconds; "MB per
# CPU-s" = input bytes / (user + system seconds), which stays meaningful on a
# machine shared with other jobs.
#   usage: scripts/bench_tokenizer.sh [BUILD_DIR]   (environment: REPEAT, RUNS)
set -euo pipefail
build=${1:-build}
repeat=${REPEAT:-8}
runs=${RUNS:-3}
kjv=$build/data/kjv/kjv.txt
vocab=$build/data/gpt2/gpt2.tiktoken
for f in "$build/zerotrain" "$kjv" "$vocab"; do
  [ -e "$f" ] || { echo "bench_tokenizer: $f not found; run make first" >&2; exit 1; }
done
cores=$(nproc)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for _ in $(seq "$repeat"); do cat "$kjv"; done >"$work/text.txt"
bytes=$(stat -c %s "$work/text.txt")

rows=()
best_row() {  # label threads command...: the run with the lowest wall time
  local label=$1 threads=$2 best="" i
  shift 2
  for i in $(seq "$runs"); do
    rm -rf "$work/out"
    /usr/bin/time -f "%e %U %S" -o "$work/time" "$@" >"$work/log" 2>&1 ||
      { echo "bench_tokenizer: $label failed: $(tail -1 "$work/log")" >&2; return 1; }
    read -r wall user sys <"$work/time"
    if [ -z "$best" ] || awk -v a="$wall" -v b="${best%% *}" 'BEGIN { exit !(a < b) }'; then
      best="$wall $(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')"
    fi
  done
  rows+=("$(awk -v l="$label" -v t="$threads" -v b="$bytes" -v w="${best%% *}" -v c="${best##* }" \
    'BEGIN { printf "| %s | %d | %.2f | %.1f | %.2f | %.1f |", l, t, w, b / 1e6 / w, c, b / 1e6 / c }')")
}

best_row "zerotrain prepare --tokenizer gpt2" 1 \
  "$build/zerotrain" prepare --input "$work/text.txt" --out "$work/out" --tokenizer gpt2 --threads 1
tokens=$(sed -n 's/^encoded .* into \([0-9]*\) tokens.*/\1/p' "$work/log")
best_row "zerotrain prepare --tokenizer gpt2" "$cores" \
  "$build/zerotrain" prepare --input "$work/text.txt" --out "$work/out" --tokenizer gpt2 --threads "$cores"

cat >"$work/tiktoken_bench.py" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import tiktoken
from tiktoken.load import load_tiktoken_bpe
pattern = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
enc = tiktoken.Encoding("gpt2", pat_str=pattern, mergeable_ranks=load_tiktoken_bpe(sys.argv[2]),
                        special_tokens={"<|endoftext|>": 50256})
text = open(sys.argv[3], encoding="utf-8").read()
threads = int(sys.argv[4])
if threads == 1:
    n = len(enc.encode_ordinary(text))
else:  # whole lines, about 1 MB a piece, as prepare cuts them
    lines = text.splitlines(keepends=True)
    per = max(1, len(lines) * 1_000_000 // len(text))
    n = sum(map(len, enc.encode_ordinary_batch(["".join(lines[i:i + per]) for i in range(0, len(lines), per)],
                                                num_threads=threads)))
print(n, "tokens")
PY
if /usr/bin/python3 -c "import sys; sys.path.insert(0, '$build/pydeps'); import tiktoken" 2>/dev/null; then
  best_row "tiktoken 0.14.0 encode_ordinary" 1 \
    /usr/bin/python3 "$work/tiktoken_bench.py" "$build/pydeps" "$vocab" "$work/text.txt" 1
  best_row "tiktoken 0.14.0 encode_ordinary_batch" "$cores" \
    /usr/bin/python3 "$work/tiktoken_bench.py" "$build/pydeps" "$vocab" "$work/text.txt" "$cores"
else
  rows+=("| tiktoken | - | not installed ($build/pydeps; \`make\` installs it) | | | |")
fi

echo "GPT-2 encoding of the KJV x $repeat: $(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 }') MB," \
  "$tokens tokens (zerotrain), $cores cores, best of $runs runs; tiktoken times include Python's start and file read"
echo "| encoder | threads | wall s | MB/s (wall) | CPU s | MB per CPU-s |"
echo "| --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
