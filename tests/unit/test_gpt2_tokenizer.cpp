// data/gpt2_tokenizer, data/gpt2_pretokenizer: GPT-2's BPE against ids known
// from OpenAI's tokenizer, against tiktoken itself (tests/reference/tiktoken_reference.py,
// where the set-up installed it into BUILD/pydeps) on the KJV, a stress text of
// every class the pattern tells apart and every Unicode code point, and on
// round trips of any bytes. Without the vocabulary (BUILD/data/gpt2, fetched by
// `make`) or tiktoken the affected tests print SKIPPED and pass.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "data/gpt2_pretokenizer.h"
#include "data/gpt2_tokenizer.h"
#include "data/shard.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += {char(0xC0 | cp >> 6), char(0x80 | (cp & 0x3F))};
  } else if (cp < 0x10000) {
    s += {char(0xE0 | cp >> 12), char(0x80 | (cp >> 6 & 0x3F)), char(0x80 | (cp & 0x3F))};
  } else {
    s += {char(0xF0 | cp >> 18), char(0x80 | (cp >> 12 & 0x3F)), char(0x80 | (cp >> 6 & 0x3F)),
          char(0x80 | (cp & 0x3F))};
  }
  return s;
}

std::string existing(const std::vector<std::string>& candidates) {
  for (const std::string& path : candidates)
    if (fs::exists(path)) return path;
  return "";
}

// The shared tokenizer, or null after a SKIPPED line when the vocabulary is absent.
const Gpt2Tokenizer* vocab_or_skip(const char* test) {
  static const std::string path = existing(gpt2_vocab_candidates());
  static const std::unique_ptr<Gpt2Tokenizer> tokenizer(path.empty() ? nullptr
                                                                     : new Gpt2Tokenizer(path));
  if (!tokenizer) {
    std::printf(
        "SKIPPED: [gpt2] %s: no GPT-2 vocabulary (BUILD/data/gpt2/gpt2.tiktoken; `make` "
        "fetches it)\n",
        test);
    SUCCEED("no GPT-2 vocabulary");
  }
  return tokenizer.get();
}

// ... and the same when this build cannot encode (no PCRE2).
const Gpt2Tokenizer* encoder_or_skip(const char* test) {
  const Gpt2Tokenizer* t = vocab_or_skip(test);
  if (t && !gpt2_encoding_available()) {
    std::printf("SKIPPED: [gpt2] %s: built without PCRE2, GPT-2 text does not encode\n", test);
    SUCCEED("no PCRE2");
    return nullptr;
  }
  return t;
}

std::string kjv_text() {
  const std::string path = existing({"build/data/kjv/kjv.txt"});
  return path.empty() ? "" : read_file(path);
}

// Pieces of text from every class the pattern tells apart, joined at random.
std::string stress_text(std::mt19937_64& rng, int parts, bool with_invalid_utf8) {
  static const std::vector<std::string> pool = {
      "Hello",
      " world",
      "THE",
      " LORD",
      "it's",
      " they'll",
      " we're",
      " you've",
      " I'm",
      " he'd",
      " don't",
      "'S",
      "'LL",
      " '",
      "''",
      "'s's",
      "rock'n'roll",
      "12345",
      " 3.14159",
      "1,000,000",
      "007",
      " 42nd",
      "  ",
      "   ",
      "\t",
      "\t\t ",
      "\r\n",
      "\r\n\r\n",
      "\n\n\n",
      " \n ",
      "\n",
      "\xC2\xA0",      // no-break space (Zs)
      "\xE3\x80\x80",  // ideographic space (Zs)
      "\xE2\x80\xA8",  // line separator (Zl)
      "\xC2\x85",      // next line U+0085 (White_Space, not Z)
      "\xE1\xA0\x8E",  // U+180E, whitespace before Unicode 6.3 only
      "\xE2\x80\x8B",  // zero-width space (Cf)
      "\xEF\xBB\xBF",  // BOM (Cf)
      "\xC2\xAD",      // soft hyphen (Cf)
      "na\xC3\xAFve",
      " caf\xC3\xA9",
      "e\xCC\x81",
      "a\xCC\x88\xCC\xA3",                                             // combining marks (Mn)
      "\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\x82\xE0\xA4\xA6\xE0\xA5\x80",  // Devanagari (Mc, Mn)
      "\xE2\x83\x9D",                                                  // enclosing circle (Me)
      " \xCE\x95\xCE\xBB\xCE\xBB\xCE\xAC\xCE\xB4\xCE\xB1",             // Greek
      " \xD0\x9C\xD0\xBE\xD1\x81\xD0\xBA\xD0\xB2\xD0\xB0",             // Cyrillic
      "\xD8\xA7\xD9\x84\xD8\xB9\xD8\xB1\xD8\xA8\xD9\x8A\xD8\xA9",      // Arabic
      "\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D",                              // Hebrew
      "\xE0\xB8\xAA\xE0\xB8\xA7\xE0\xB8\xB1\xE0\xB8\xAA\xE0\xB8\x94\xE0\xB8\xB5",  // Thai
      "\xE6\x9D\xB1\xE4\xBA\xAC",
      "\xE3\x81\x8B\xE3\x81\xAA",
      "\xED\x95\x9C\xEA\xB8\x80",
      "\xD9\xA3\xD9\xA4",  // Arabic-Indic digits (Nd)
      "\xE2\x85\xAB",      // Roman numeral twelve (Nl)
      "\xC2\xBD\xC2\xB2",  // one half, superscript two (No)
      "!?",
      "...",
      "\xE2\x80\x94",
      "\xE2\x80\xA6",
      " $",
      "\xE2\x82\xAC",
      "\xE2\x88\x91",
      "(x)",
      " --",
      "#!",
      "@user",
      "a_b",
      "\xF0\x9F\x98\x80",                  // emoji
      "\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD",  // emoji with a skin tone
      "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7",  // ZWJ sequence
      "\xF0\x9F\x87\xA9\xF0\x9F\x87\xAA",                                          // flag
      "\xE2\x9D\xA4\xEF\xB8\x8F",  // variation selector
      "\xEE\x80\x80",              // private use
      "\xCD\xB8",                  // unassigned U+0378
      "\xEF\xBF\xBF",              // noncharacter U+FFFF
      "\xF4\x8F\xBF\xBF",          // U+10FFFF
      std::string("\x00\x07\x1B", 3),
      "<|endoftext|>",
      " <|endoftext|>\n",
  };
  static const std::vector<std::string> invalid = {
      "\xFF", "\xC0\xAF", "\xED\xA0\x80", "\xE2\x82", "\x80", "\xF5\x80\x80\x80", "\xFE\xFE"};
  std::string text;
  for (int i = 0; i < parts; ++i) {
    if (with_invalid_utf8 && rng() % 10 == 0) text += invalid[rng() % invalid.size()];
    else text += pool[rng() % pool.size()];
  }
  return text;
}

// Each code point (no surrogates) after a letter, before a digit, after a
// space and before a line break: how the regex classes it shows in the pieces.
std::string every_code_point() {
  std::string text;
  for (uint32_t cp = 0; cp < 0x110000; ++cp) {
    if (cp >= 0xD800 && cp < 0xE000) continue;
    const std::string c = utf8(cp);
    text += "a" + c + "1 " + c + "\n";
  }
  return text;
}

// tiktoken's ids for each text (valid UTF-8), or nothing after a SKIPPED line
// when tiktoken is not installed.
std::vector<std::vector<int>> tiktoken_ids(const Gpt2Tokenizer& tokenizer,
                                           const std::vector<std::string>& texts,
                                           const char* test) {
  std::string pydeps;
  for (const std::string& vocab : gpt2_vocab_candidates()) {
    const std::string build = fs::path(vocab).parent_path().parent_path().parent_path().string();
    if (fs::exists(build + "/pydeps/tiktoken")) {
      pydeps = build + "/pydeps";
      break;
    }
  }
  if (pydeps.empty()) {
    std::printf("SKIPPED: [gpt2] %s: no tiktoken (BUILD/pydeps; `make` installs it)\n", test);
    SUCCEED("no tiktoken");
    return {};
  }
  const TestDir text_dir("zt_tiktoken");
  const std::string& dir = text_dir.path;
  for (size_t i = 0; i < texts.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "/%03zu.txt", i);
    write_file(dir + name, texts[i]);
  }
  const std::string here = __FILE__;
  const std::string script =
      here.substr(0, here.find_last_of('/') + 1) + "../reference/tiktoken_reference.py";
  const std::string cmd = "PYTHONPATH='" + pydeps + "' /usr/bin/python3 '" + script + "' '" +
                          tokenizer.vocab_path() + "' '" + dir + "' >/dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  std::vector<std::vector<int>> ids;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    for (size_t i = 0; i < texts.size(); ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "/%03zu.ids", i);
      const std::string bytes = read_file(dir + name);
      std::vector<int> v(bytes.size() / 4);
      for (size_t k = 0; k < v.size(); ++k)
        v[k] = int(uint32_t(uint8_t(bytes[4 * k])) | uint32_t(uint8_t(bytes[4 * k + 1])) << 8 |
                   uint32_t(uint8_t(bytes[4 * k + 2])) << 16 |
                   uint32_t(uint8_t(bytes[4 * k + 3])) << 24);
      ids.push_back(v);
    }
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
    std::printf("SKIPPED: [gpt2] %s: tiktoken in %s does not import\n", test, pydeps.c_str());
    SUCCEED("tiktoken does not import");
    return {};
  }
  INFO("tiktoken_reference.py exit status " << status);
  REQUIRE(ids.size() == texts.size());
  return ids;
}

// The first index where two id lists differ, for messages.
size_t first_difference(const std::vector<int>& a, const std::vector<int>& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

TEST_CASE("gpt2: known ids of OpenAI's tokenizer", "[gpt2]") {
  const Gpt2Tokenizer* t = encoder_or_skip("known ids");
  if (!t) return;
  CHECK(t->vocab_size() == 50257);
  CHECK(t->eot_id() == 50256);
  // From tiktoken 0.14.0's r50k_base (encode_ordinary).
  CHECK(t->encode("Hello world") == std::vector<int>{15496, 995});
  CHECK(t->encode("In the beginning God created the heaven and the earth.") ==
        std::vector<int>{818, 262, 3726, 1793, 2727, 262, 9538, 290, 262, 4534, 13});
  CHECK(t->encode("I'm sure they'll say it's 2024.") ==
        std::vector<int>{40, 1101, 1654, 484, 1183, 910, 340, 338, 48609, 13});
  CHECK(t->encode("  leading spaces\r\n\r\nand CRLF") ==
        std::vector<int>{220, 3756, 9029, 201, 198, 201, 198, 392, 327, 7836, 37});
  CHECK(t->encode("<|endoftext|>") == std::vector<int>{27, 91, 437, 1659, 5239, 91, 29});
  CHECK(t->encode("na\xC3\xAFve caf\xC3\xA9 \xE6\x9D\xB1\xE4\xBA\xAC \xF0\x9F\x98\x80") ==
        std::vector<int>{2616, 38776, 40304, 10545, 251, 109, 12859, 105, 30325, 222});
  CHECK(t->encode(std::string(70, 'x')) ==
        std::vector<int>{24223, 24223, 24223, 24223, 24223, 24223, 24223, 24223, 12343, 5324});
  CHECK(t->encode("").empty());
  CHECK(t->decode({15496, 995, 50256}) == "Hello world<|endoftext|>");
  CHECK(t->piece(995) == "\xC4\xA0world");  // "Ġworld"
  CHECK(t->piece(50256) == "<|endoftext|>");
  require_parts(error_of([&] { t->decode({1, 50257}); }), {"id 50257 at index 1"});
}

TEST_CASE("gpt2: pieces of the pre-tokenizer", "[gpt2]") {
  if (!gpt2_encoding_available()) {
    std::printf("SKIPPED: [gpt2] pre-tokenizer: built without PCRE2\n");
    require_parts(error_of([] { Gpt2PreTokenizer pre; }), {"unavailable in this build"});
    return;
  }
  Gpt2PreTokenizer pre;
  auto pieces = [&](const std::string& text) {
    std::vector<std::string_view> views;
    pre.split(text, &views);
    return std::vector<std::string>(views.begin(), views.end());
  };
  using V = std::vector<std::string>;
  CHECK(pieces("I'm here, they'll go") == V{"I", "'m", " here", ",", " they", "'ll", " go"});
  CHECK(pieces("'S and 'LL are not contractions") ==
        V{"'", "S", " and", " '", "LL", " are", " not", " contractions"});
  CHECK(pieces("x   y") == V{"x", "  ", " y"});  // a space stays with the next word
  // A whitespace run before a word gives its last character to a piece of its own.
  CHECK(pieces("a\r\n\r\nb  ") == V{"a", "\r\n\r", "\n", "b", "  "});
  CHECK(pieces("12345 3.14") == V{"12345", " 3", ".", "14"});
  CHECK(pieces("e\xCC\x81t\xC3\xA9") == V{"e", "\xCC\x81", "t\xC3\xA9"});  // a mark is not \p{L}
  // U+0085 is whitespace (a space before it stands alone), U+180E is not.
  CHECK(pieces(" \xC2\x85x") == V{" ", "\xC2\x85", "x"});
  CHECK(pieces(" \xE1\xA0\x8Ex") == V{" \xE1\xA0\x8E", "x"});
  // Ill-formed bytes are pieces of their own; the text around them splits alone.
  CHECK(pieces("ab\xFF\xFE cd  \xC0\xAF") == V{"ab", "\xFF\xFE", " cd", "  ", "\xC0\xAF"});
  CHECK(pieces("\xE2\x82x") == V{"\xE2\x82", "x"});
  CHECK(pieces(std::string("a\0b", 3)) == V{"a", std::string(1, '\0'), "b"});
}

TEST_CASE("gpt2: every token's bytes merge back into that token; both merge loops agree",
          "[gpt2]") {
  const Gpt2Tokenizer* t = vocab_or_skip("merges");
  if (!t) return;
  // Then encode's shortcut for a piece that is a whole token is what the merges give.
  int unreachable = 0;
  for (int id = 0; id < Gpt2Tokenizer::kEndOfText; ++id) {
    std::vector<int> linear, heap;
    t->merge_piece(t->token_bytes(id), false, &linear);
    t->merge_piece(t->token_bytes(id), true, &heap);
    unreachable += linear != std::vector<int>{id};
    REQUIRE(heap == linear);
  }
  CHECK(unreachable == 0);
  std::mt19937_64 rng(test_seed());
  const std::string kjv = kjv_text();
  for (int i = 0; i < 2000; ++i) {
    std::string piece;
    const size_t n = 2 + rng() % 63;
    if (!kjv.empty() && i % 2 == 0) {
      piece = kjv.substr(rng() % (kjv.size() - n), n);
    } else {
      for (size_t k = 0; k < n; ++k) piece += char(rng() % 256);
    }
    std::vector<int> linear, heap;
    t->merge_piece(piece, false, &linear);
    t->merge_piece(piece, true, &heap);
    REQUIRE(heap == linear);
    REQUIRE(t->decode(linear) == piece);
  }
  std::set<std::string> spellings;
  for (int b = 0; b < 256; ++b)
    spellings.insert(gpt2_byte_to_unicode(static_cast<unsigned char>(b)));
  CHECK(spellings.size() == 256);
  CHECK(gpt2_byte_to_unicode(' ') == "\xC4\xA0");   // Ġ
  CHECK(gpt2_byte_to_unicode('\n') == "\xC4\x8A");  // Ċ
  CHECK(gpt2_byte_to_unicode('A') == "A");
}

TEST_CASE("gpt2: decode(encode(s)) == s for the KJV, stress texts and random bytes", "[gpt2]") {
  const Gpt2Tokenizer* t = encoder_or_skip("round trips");
  if (!t) return;
  const std::string kjv = kjv_text();
  if (kjv.empty()) std::printf("SKIPPED: [gpt2] KJV round trip: no build/data/kjv/kjv.txt\n");
  else CHECK(t->decode(t->encode(kjv)) == kjv);
  std::mt19937_64 rng(test_seed());
  for (int i = 0; i < 20; ++i) {
    const std::string text = stress_text(rng, 200 + int(rng() % 400), true);
    REQUIRE(t->decode(t->encode(text)) == text);
    std::string bytes(rng() % 2000, '\0');
    for (char& c : bytes) c = char(rng() % 256);
    REQUIRE(t->decode(t->encode(bytes)) == bytes);
  }
  // A long run of one character merges through the heap without quadratic cost.
  const std::string spaces(1 << 20, ' ');
  CHECK(t->decode(t->encode(spaces + "x")) == spaces + "x");
}

TEST_CASE("gpt2: ill-formed bytes split the text; safe cuts do not change the ids", "[gpt2]") {
  const Gpt2Tokenizer* t = encoder_or_skip("segmentation");
  if (!t) return;
  std::mt19937_64 rng(test_seed());
  for (int i = 0; i < 50; ++i) {
    const std::string a = stress_text(rng, 20, false), b = stress_text(rng, 20, false);
    for (const std::string bad : {"\xFF", "\xC0\xAF\x80", "\xED\xA0\x80"}) {
      std::vector<int> expected = t->encode(a);
      t->merge_piece(bad, false, &expected);
      t->encode_append(b, &expected);
      REQUIRE(t->encode(a + bad + b) == expected);
    }
  }
  const std::string kjv = kjv_text();
  const std::string text = kjv.empty() ? stress_text(rng, 8000, true)
                                       : kjv.substr(0, 30000) + stress_text(rng, 8000, true);
  const std::vector<int> whole = t->encode(text);
  int cuts = 0;
  for (size_t from = 1 + rng() % 97; from < text.size(); from += 1 + rng() % 1500) {
    const size_t cut = Gpt2PreTokenizer::safe_cut(text, from);
    if (cut == std::string::npos) break;
    REQUIRE(cut >= from);
    INFO("cut at " << cut);
    std::vector<int> parts = t->encode(text.substr(0, cut));
    t->encode_append(std::string_view(text).substr(cut), &parts);
    REQUIRE(parts == whole);
    ++cuts;
  }
  CHECK(cuts > 20);
  CHECK(Gpt2PreTokenizer::safe_cut("\xE6\x9D\xB1\xE4\xBA\xAC", 1) == std::string::npos);
  CHECK(Gpt2PreTokenizer::safe_cut("ab, c", 1) == 2);
}

TEST_CASE("gpt2: ids equal tiktoken's on the KJV, stress text and every code point", "[gpt2]") {
  const Gpt2Tokenizer* t = encoder_or_skip("tiktoken comparison");
  if (!t) return;
  std::mt19937_64 rng(test_seed());
  std::vector<std::string> texts = {stress_text(rng, 30000, false), every_code_point(),
                                    std::string(3000, 'x') + " " + std::string(3000, ' ') + "y"};
  const std::string kjv = kjv_text();
  if (!kjv.empty()) texts.push_back(kjv);
  const std::vector<std::vector<int>> reference = tiktoken_ids(*t, texts, "tiktoken comparison");
  if (reference.empty()) return;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::vector<int> ours = t->encode(texts[i]);
    const size_t at = first_difference(ours, reference[i]);
    INFO("text " << i << " (" << texts[i].size() << " bytes): first difference at id " << at
                 << " of " << reference[i].size());
    CHECK(at == reference[i].size());
    CHECK(ours.size() == reference[i].size());
  }
}

TEST_CASE("gpt2: vocabulary files are checked line by line", "[gpt2]") {
  const TestDir vocab_dir("zt_vocab");
  const std::string& dir = vocab_dir.path;
  const std::string path = dir + "/v.tiktoken";
  auto error_for = [&](const std::string& text) {
    write_file(path, text);
    return error_of([&] { Gpt2Tokenizer tok(path); });
  };
  require_parts(error_for("IQ== 0\nnot-base64! 1\n"), {"v.tiktoken:2:", "is not base64"});
  require_parts(error_for("IQ== 0\nIg== x\n"), {"v.tiktoken:2:", "rank 'x'"});
  require_parts(error_for("IQ== 0\nIg== 0\n"), {"v.tiktoken:2:", "rank 0 repeated"});
  require_parts(error_for("IQ==0\n"), {"v.tiktoken:1:", "expected \"base64 rank\""});
  require_parts(error_for("IQ== 0\nIg== 1\n"), {"v.tiktoken: 2 ranks", "r50k_base"});
  require_parts(error_of([&] { Gpt2Tokenizer tok(dir + "/missing.tiktoken"); }),
                {"missing.tiktoken: no such GPT-2 vocabulary file"});
  require_parts(error_of([&] { make_tokenizer(dir + "/missing.tiktoken"); }),
                {"missing.tiktoken: no such GPT-2 vocabulary file"});
  const Gpt2Tokenizer* t = vocab_or_skip("vocabulary errors");
  if (t && gpt2_encoding_available()) {
    // Two ranks swapped: still a vocabulary, and "Hello world" encodes differently.
    std::string text = read_file(t->vocab_path());
    const size_t hello = text.find(" 15496\n"), world = text.find(" 995\n");
    REQUIRE(world < hello);
    text.replace(hello, 7, " 995\n").replace(world, 5, " 15496\n");
    CHECK(error_for(text) == "");
    Gpt2Tokenizer swapped(path);
    CHECK(swapped.encode("Hello world") == std::vector<int>{995, 15496});
  }
}

}  // namespace zt
