#!/usr/bin/python3
"""GPT-2 ids from OpenAI's tiktoken, the reference zerotrain's BPE is held to.

usage: tiktoken_reference.py VOCAB DIR
  For every DIR/*.txt (UTF-8 text), writes DIR/NAME.ids: the ids of
  encode_ordinary (the text "<|endoftext|>" is text, as in zerotrain), as
  little-endian uint32. VOCAB is the local gpt2.tiktoken; nothing is downloaded.
  tiktoken is found on sys.path (the set-up installs it into BUILD/pydeps).
  Exit status 3 when tiktoken cannot be imported, so callers can skip.
"""
import glob
import os
import struct
import sys

# GPT-2's pattern as OpenAI wrote it (tiktoken's r50k_base uses an equivalent,
# faster spelling); tiktoken's regex engine gives \s Unicode's White_Space.
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    try:
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe
    except ImportError as e:
        print(f"tiktoken unavailable: {e}")
        sys.exit(3)
    ranks = load_tiktoken_bpe(sys.argv[1])
    enc = tiktoken.Encoding("gpt2-local", pat_str=GPT2_PATTERN, mergeable_ranks=ranks,
                            special_tokens={"<|endoftext|>": 50256})
    for path in sorted(glob.glob(os.path.join(sys.argv[2], "*.txt"))):
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
        ids = enc.encode_ordinary(text)
        with open(path[:-4] + ".ids", "wb") as f:
            f.write(struct.pack(f"<{len(ids)}I", *ids))
    print(f"tiktoken {tiktoken.__version__}: encoded", len(glob.glob(os.path.join(sys.argv[2], "*.txt"))), "texts")


if __name__ == "__main__":
    main()
