// GPT-2's pre-tokenizer through PCRE2. The pattern is compiled once, anchored
// (every match must start where the previous one ended, which the
// alternatives guarantee for well-formed text), with Unicode properties
// (PCRE2_UCP) and JIT-compiled where PCRE2 has a JIT for the machine.
#include "data/gpt2_pretokenizer.h"

#include <algorithm>
#include <string>

#include "data/shard.h"
#include "data/utf8.h"

#ifdef ZT_HAVE_PCRE2
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#endif

namespace zt {

size_t Gpt2PreTokenizer::safe_cut(std::string_view text, size_t from) {
  auto alnum = [](unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
  };
  for (size_t p = std::max<size_t>(from, 1); p < text.size(); ++p) {
    const unsigned char before = static_cast<unsigned char>(text[p - 1]);
    const unsigned char at = static_cast<unsigned char>(text[p]);
    if (alnum(before) && at < 0x80 && !alnum(at)) return p;
  }
  return std::string_view::npos;
}

#ifdef ZT_HAVE_PCRE2

namespace {

// OpenAI's pattern, with \s spelled out as Unicode's White_Space property
// (tab..carriage return, U+0085 and the separators \p{Z}), as the reference
// tokenizers' regex engines define it: PCRE2 10.42's \s is a fixed list that
// still holds U+180E, whitespace only before Unicode 6.3. Possessive repeats where no backtracking
// can change the result (the non-possessive \s+ before the lookahead must give back one character).
constexpr char kPattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d"
    "| ?\\p{L}++| ?\\p{N}++| ?[^\\t-\\r\\x{85}\\p{Z}\\p{L}\\p{N}]++"
    "|[\\t-\\r\\x{85}\\p{Z}]+(?![^\\t-\\r\\x{85}\\p{Z}])|[\\t-\\r\\x{85}\\p{Z}]++";

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof buffer);
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

struct Gpt2PreTokenizer::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Compiled() { pcre2_code_free(code); }
};

Gpt2PreTokenizer::Gpt2PreTokenizer() : compiled_(new Compiled) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED,
                                  PCRE2_UTF | PCRE2_UCP | PCRE2_ANCHORED | PCRE2_NO_UTF_CHECK,
                                  &error, &offset, nullptr);
  if (!compiled_->code)
    throw DataError("gpt2 tokenizer: PCRE2 cannot compile the pre-tokenizer pattern at offset " +
                    std::to_string(offset) + ": " + pcre2_message(error));
  // Without a JIT for this machine, pcre2_match interprets the same pattern.
  compiled_->jit = pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE) == 0;
}

Gpt2PreTokenizer::~Gpt2PreTokenizer() = default;

bool Gpt2PreTokenizer::available() { return true; }

void Gpt2PreTokenizer::split(std::string_view text, std::vector<std::string_view>* pieces) const {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(compiled_->code, nullptr);
  if (!md) throw std::bad_alloc();
  struct Release {
    pcre2_match_data* md;
    ~Release() { pcre2_match_data_free(md); }
  } release{md};
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);

  // Splits the well-formed run [begin, end), a subject of its own.
  auto split_run = [&](size_t begin, size_t end) {
    const PCRE2_SPTR subject = p + begin;
    const PCRE2_SIZE length = end - begin;
    PCRE2_SIZE at = 0;
    while (at < length) {
      const int rc =
          compiled_->jit
              ? pcre2_jit_match(compiled_->code, subject, length, at, 0, md, nullptr)
              : pcre2_match(compiled_->code, subject, length, at, PCRE2_NO_UTF_CHECK, md, nullptr);
      // Letters, numbers, whitespace and everything else: some alternative
      // matches at every character, so a failure is a broken PCRE2.
      if (rc < 0 || ov[1] <= at)
        throw DataError("gpt2 tokenizer: PCRE2 matched nothing at byte " +
                        std::to_string(begin + at) + " (" + pcre2_message(rc) + ")");
      pieces->emplace_back(text.data() + begin + at, ov[1] - at);
      at = ov[1];
    }
  };

  size_t i = 0;
  while (i < n) {
    size_t j = i;
    while (j < n) {
      if (p[j] < 0x80) {
        ++j;
        continue;
      }
      const Utf8Scan s = scan_utf8(p + j, n - j);
      if (!s.complete) break;
      j += s.length;
    }
    if (j > i) split_run(i, j);
    size_t k = j;
    while (k < n && p[k] >= 0x80) {
      const Utf8Scan s = scan_utf8(p + k, n - k);
      if (s.complete) break;
      k += s.length;
    }
    if (k > j) pieces->emplace_back(text.data() + j, k - j);
    i = k;
  }
}

#else  // no PCRE2

struct Gpt2PreTokenizer::Compiled {};

Gpt2PreTokenizer::Gpt2PreTokenizer() {
  throw DataError(
      "gpt2 tokenizer: encoding is unavailable in this build (built without PCRE2, "
      "libpcre2-dev); decoding GPT-2 ids works, to encode text rebuild where libpcre2-dev is "
      "installed");
}

Gpt2PreTokenizer::~Gpt2PreTokenizer() = default;

bool Gpt2PreTokenizer::available() { return false; }

void Gpt2PreTokenizer::split(std::string_view, std::vector<std::string_view>*) const {}

#endif

}  // namespace zt
