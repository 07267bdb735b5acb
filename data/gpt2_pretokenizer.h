// GPT-2's pre-tokenizer: the text is cut into pieces by OpenAI's regular
// expression, and BPE merges never cross a piece boundary.
//
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// matched with PCRE2 (JIT-compiled, Unicode properties from PCRE2's tables),
// where \s is Unicode's White_Space property as in the reference
// implementations. Bytes that are not well-formed UTF-8 are outside the
// regex's alphabet: each maximal run of them is a piece of its own, and the
// well-formed text between such runs is split as if it were the whole text.
// Built only where PCRE2 was found (ZT_HAVE_PCRE2); elsewhere the constructor
// throws DataError with one line.
#pragma once
#include <memory>
#include <string_view>
#include <vector>

namespace zt {

class Gpt2PreTokenizer {
 public:
  Gpt2PreTokenizer();
  ~Gpt2PreTokenizer();
  Gpt2PreTokenizer(const Gpt2PreTokenizer&) = delete;
  Gpt2PreTokenizer& operator=(const Gpt2PreTokenizer&) = delete;

  // Appends the pieces of `text` to `pieces`, in order; they concatenate to
  // `text`. Safe to call from several threads at once.
  void split(std::string_view text, std::vector<std::string_view>* pieces) const;

  // Whether this build has PCRE2 (and so can encode GPT-2 text).
  static bool available();

  // The first position p >= from (p < text.size()) where text may be cut in
  // two without changing its pieces, or npos: an ASCII letter or digit at
  // p - 1 followed by an ASCII character that is neither. Every alternative
  // of the pattern that holds a letter or digit ends at the first character
  // outside its class, so some piece ends at p whatever follows; the pieces
  // before p looked at most one character ahead, which is still text[p - 1]'s
  // neighbour inside the first part; the pattern has no lookbehind, so the
  // pieces from p on depend on text[p..] only; and no multi-byte sequence
  // crosses an ASCII byte.
  static size_t safe_cut(std::string_view text, size_t from);

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace zt
