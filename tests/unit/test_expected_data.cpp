// data/: the exact rules of data/loader.h, data/shard.h and data/tokenizer.h,
// checked against values computed here from the documented rules rather than
// against other runs of the same code (sorted or self-consistent comparisons
// pass with a wrong order or a biased shuffle). Each case names the mutants
// of tests/mutations.txt it catches.
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "data/loader.h"
#include "data/shard.h"
#include "data/tokenizer.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"

using namespace zt;

namespace {

// Token i of the stream is i (mod the vocabulary): a sequence's first input
// names the sequence.
std::vector<uint32_t> counting_tokens(size_t n) {
  std::vector<uint32_t> t(n);
  for (size_t i = 0; i < n; i++) t[i] = uint32_t(i);
  return t;
}

}  // namespace

// data-loader-rank-major, data-loader-sequences-no-minus-one,
// data-loader-targets-not-shifted: loader.h's indexing, position by position.
TEST_CASE("loader: micro-step m of rank r reads positions k*G + (m*W + r)*B, in file order",
          "[data]") {
  TestDir dir("zt_expected_data");
  std::mt19937_64 rng(test_seed() + 201);
  const int T = 2 + int(rng() % 6);
  const int64_t S = 40 + int64_t(rng() % 20);
  // Exactly S*T + 1 tokens give S sequences; S*T tokens give S - 1.
  for (int64_t extra : {int64_t(1), int64_t(0)}) {
    const size_t n = size_t(S * T + extra);
    write_shard(dir.file("s.bin"), counting_tokens(n), false);
    const int64_t expected_sequences = (int64_t(n) - 1) / T;
    for (int W : {1, 2, 3}) {
      const int B = 1 + int(rng() % 3), A = 1 + int(rng() % 3);
      CAPTURE(T, S, extra, W, B, A);
      const int64_t G = int64_t(W) * A * B;
      for (int r = 0; r < W; r++) {
        DataLoader loader(dir.file("s.bin"), 65536, B, T, r, W, A, 7, false);
        REQUIRE(loader.num_sequences() == expected_sequences);
        std::vector<int> in(size_t(B) * T), tgt(in.size());
        for (int64_t k : {int64_t(0), int64_t(1), int64_t(5)})
          for (int m = 0; m < A; m++) {
            loader.micro_batch(k, m, in.data(), tgt.data());
            for (int b = 0; b < B; b++) {
              const int64_t position = k * G + (int64_t(m) * W + r) * B + b;
              const int64_t s = position % expected_sequences;
              for (int t = 0; t < T; t++) {
                REQUIRE(in[size_t(b) * T + t] == int(s * T + t));
                REQUIRE(tgt[size_t(b) * T + t] == int(s * T + t + 1));
              }
            }
          }
      }
    }
  }
}

// data-loader-sattolo, data-loader-shuffle-skips-first: a Fisher-Yates
// shuffle makes every permutation; Sattolo's variant (j < i) only the cyclic
// ones, and a loop that stops before position 1 only half of them.
TEST_CASE("loader: the shuffle reaches every permutation of a small epoch", "[data]") {
  TestDir dir("zt_expected_data");
  const int T = 2, S = 4;
  write_shard(dir.file("s.bin"), counting_tokens(size_t(S * T + 1)), false);
  DataLoader loader(dir.file("s.bin"), 65536, 1, T, 0, 1, 1, test_seed(), true);
  REQUIRE(loader.num_sequences() == S);
  std::map<std::vector<int>, int> seen;
  int in[2], tgt[2];
  const int epochs = 2400;  // 100 per permutation expected; missing one: p < 1e-40
  for (int64_t e = 0; e < epochs; e++) {
    std::vector<int> perm;
    for (int64_t g = e * S; g < (e + 1) * S; g++) {
      loader.micro_batch(g, 0, in, tgt);
      perm.push_back(in[0] / T);
    }
    REQUIRE(std::set<int>(perm.begin(), perm.end()).size() == size_t(S));
    seen[perm]++;
  }
  CHECK(seen.size() == 24);
  int fixed_first = 0;  // sequence 0 in place: a quarter of the epochs
  for (const auto& [perm, count] : seen)
    if (perm[0] == 0) fixed_first += count;
  CHECK(fixed_first > epochs / 4 - 150);
  CHECK(fixed_first < epochs / 4 + 150);
}

// data-shard-narrow-max: 65535 is the largest uint16 token; 65536 needs a wide shard.
// data-shard-vocab-gt: tokens must be < vocab_size; the first one that is not is named.
TEST_CASE("shards: the uint16 and vocabulary bounds are exact", "[data]") {
  TestDir dir("zt_expected_data");
  write_shard(dir.file("max.bin"), {0, 65535, 7}, false);
  CHECK(read_shard(dir.file("max.bin"), 65536) == std::vector<uint32_t>{0, 65535, 7});
  CHECK(error_of([&] {
          write_shard(dir.file("big.bin"), {65536}, false);
        }).find("does not fit a uint16 shard") != std::string::npos);
  std::mt19937_64 rng(test_seed() + 202);
  const int vocab = 50 + int(rng() % 200);
  write_shard(dir.file("v.bin"), {0, uint32_t(vocab - 1), uint32_t(vocab), uint32_t(vocab + 1)},
              false);
  const std::string message = error_of([&] { read_shard(dir.file("v.bin"), vocab); });
  require_parts(message, {"token " + std::to_string(vocab) + " at index 2",
                          "out of range for model.vocab_size " + std::to_string(vocab)});
  CHECK(read_shard(dir.file("v.bin"), vocab + 2).size() == 4);
}

// data-byte-decode-255, data-printable-del, data-piece-space-escaped.
TEST_CASE("byte tokenizer: all 256 bytes decode; DEL and controls print as U+FFFD", "[data]") {
  ByteTokenizer t;
  for (int id = 0; id < 256; id++) CHECK(t.decode({id}) == std::string(1, char(id)));
  CHECK(error_of([&] { t.decode({256}); }).find("id 256 at index 0") != std::string::npos);
  CHECK(printable_utf8("a\x7F"
                       "b") ==
        "a\xEF\xBF\xBD"
        "b");
  CHECK(printable_utf8("\x1F\t\n ~") == "\xEF\xBF\xBD\t\n ~");
  CHECK(t.piece(' ') == " ");
  CHECK(t.piece('~') == "~");
  CHECK(t.piece(0x1F) == "\\x1F");
  CHECK(t.piece(0x7F) == "\\x7F");
}
