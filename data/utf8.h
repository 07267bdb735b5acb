// UTF-8 well-formedness (RFC 3629 / Unicode table 3-7), shared by the
// terminal-safe printer and the GPT-2 pre-tokenizer so that both agree on
// which bytes are text.
#pragma once
#include <cstddef>

namespace zt {

struct Utf8Scan {
  size_t length;  // >= 1: bytes of the longest well-formed prefix of a sequence at p
  bool complete;  // whether those bytes are one whole code point
};

// Scans the sequence starting at p (n >= 1 bytes available). The lead byte
// fixes the length and the allowed range of the first continuation byte, which
// excludes overlong forms, surrogates and code points above U+10FFFF. An
// ill-formed sequence reports its "maximal subpart" (Unicode's term): the lead
// and the continuation bytes that still fit, at least one byte.
inline Utf8Scan scan_utf8(const unsigned char* p, size_t n) {
  const unsigned char lead = p[0];
  if (lead < 0x80) return {1, true};
  size_t length = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return {1, false};
  }
  size_t valid = 1;
  while (valid < length && valid < n) {
    const unsigned char c = p[valid];
    const unsigned char min = valid == 1 ? lo : 0x80, max = valid == 1 ? hi : 0xBF;
    if (c < min || c > max) break;
    ++valid;
  }
  return {valid, valid == length};
}

}  // namespace zt
