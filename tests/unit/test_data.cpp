// data/: shard format and validation messages, glob expansion, tokenizers,
// the stateless rank-aware loader, and `prepare`. Inputs are fresh random
// data each run (replay a failure with the seed the run prints).
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

#include "data/loader.h"
#include "data/prepare.h"
#include "data/shard.h"
#include "data/tokenizer.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "train/cli/commands.h"

namespace fs = std::filesystem;
using namespace zt;

namespace {

std::vector<uint32_t> random_tokens(std::mt19937_64& rng, size_t n, uint32_t vocab) {
  std::vector<uint32_t> t(n);
  for (auto& v : t) v = uint32_t(rng() % vocab);
  return t;
}

// A raw shard: header words as given, then `token_bytes` zero bytes.
std::string raw_shard(int32_t magic, int32_t version, int32_t count, size_t token_bytes) {
  std::string bytes(size_t(kShardHeaderBytes) + token_bytes, '\0');
  const int32_t words[3] = {magic, version, count};
  for (int w = 0; w < 3; ++w)
    for (int b = 0; b < 4; ++b)
      bytes[size_t(4 * w + b)] = char(uint8_t(uint32_t(words[w]) >> (8 * b)));
  return bytes;
}

// n random code points >= min_code_point (no surrogates), UTF-8 encoded.
std::string random_utf8(std::mt19937_64& rng, int n, uint32_t min_code_point) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    uint32_t cp = min_code_point + uint32_t(rng() % (0x110000 - min_code_point));
    if (cp >= 0xD800 && cp < 0xE000) cp = 'x';
    if (cp < 0x80) text += char(cp);
    else if (cp < 0x800) text += {char(0xC0 | cp >> 6), char(0x80 | (cp & 0x3F))};
    else if (cp < 0x10000)
      text += {char(0xE0 | cp >> 12), char(0x80 | (cp >> 6 & 0x3F)), char(0x80 | (cp & 0x3F))};
    else
      text += {char(0xF0 | cp >> 18), char(0x80 | (cp >> 12 & 0x3F)), char(0x80 | (cp >> 6 & 0x3F)),
               char(0x80 | (cp & 0x3F))};
  }
  return text;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The error a read of `path` gives: must be one line starting with the path.
std::string shard_error(const std::string& path, int vocab) {
  std::string message = error_of([&] { read_shard(path, vocab); });
  CAPTURE(message);
  CHECK(message.rfind(path + ": ", 0) == 0);
  CHECK(!contains(message, "\n"));
  return message;
}

// `zerotrain prepare ARGS` as main runs it: 0, or 2 after the one-line
// message of a usage or data error on stderr.
int run_prepare(const std::vector<std::string>& args) {
  try {
    return run_prepare_command(args);
  } catch (const std::exception& e) {
    std::cerr << "zerotrain: " << e.what() << std::endl;
    return 2;
  }
}

// Swaps std::cout and std::cerr for string streams while alive.
struct CaptureOutput {
  std::stringstream out, err;
  std::streambuf* old_out = std::cout.rdbuf(out.rdbuf());
  std::streambuf* old_err = std::cerr.rdbuf(err.rdbuf());
  ~CaptureOutput() {
    std::cout.rdbuf(old_out);
    std::cerr.rdbuf(old_err);
  }
};

}  // namespace

TEST_CASE("shards round-trip in both widths", "[data]") {
  std::mt19937_64 rng = test_rng(601);
  TestDir dir{"zt_test_data"};
  for (bool wide : {false, true}) {
    const uint32_t vocab = wide ? 100000 + uint32_t(rng() % 1000000) : 1 + uint32_t(rng() % 65536);
    const auto tokens = random_tokens(rng, 1 + rng() % 5000, vocab);
    const std::string path = dir.file(wide ? "wide.bin" : "narrow.bin");
    write_shard(path, tokens, wide);
    CHECK(fs::file_size(path) == uint64_t(kShardHeaderBytes) + tokens.size() * (wide ? 4 : 2));
    CHECK(read_shard(path, int(vocab)) == tokens);
  }
  // Nothing but the two shards: the temporary files were renamed into place.
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 2);
  const std::string narrow = dir.file("too_big.bin");
  std::string message = error_of([&] { write_shard(narrow, {1, 70000}, false); });
  CHECK(contains(message, "70000"));
  CHECK(contains(message, "index 1"));
  CHECK(contains(error_of([&] { write_shard(narrow, {}, false); }), "empty"));
  CHECK(!fs::exists(narrow));
}

TEST_CASE("bad shards give one-line messages naming the file and the problem", "[data]") {
  std::mt19937_64 rng = test_rng(602);
  TestDir dir{"zt_test_data"};

  const std::string missing = dir.file("missing.bin");
  CHECK(contains(shard_error(missing, 256), "no such file"));

  const std::string empty = dir.file("empty.bin");
  write_file(empty, "");
  CHECK(contains(shard_error(empty, 256), "file is empty"));

  const std::string short_file = dir.file("short.bin");
  write_file(short_file, std::string(100, '\7'));
  CHECK(contains(shard_error(short_file, 256), "100 bytes, shorter than the 1024-byte"));

  const int32_t bad_magic_value = 1000 + int32_t(rng() % 1000000);
  const std::string bad_magic = dir.file("bad_magic.bin");
  write_file(bad_magic, raw_shard(bad_magic_value, 1, 4, 8));
  std::string message = shard_error(bad_magic, 256);
  CHECK(contains(message, "bad magic number " + std::to_string(bad_magic_value)));
  CHECK(contains(message, "20240520"));

  const std::string wrong_version = dir.file("wrong_version.bin");
  write_file(wrong_version, raw_shard(kShardMagicU16, 7, 4, 8));
  CHECK(contains(shard_error(wrong_version, 256),
                 "version 7 for magic 20240520, expected version 1"));
  write_file(wrong_version, raw_shard(kShardMagicU32, 1, 4, 16));
  CHECK(contains(shard_error(wrong_version, 256),
                 "version 1 for magic 20240801, expected version 7"));

  const std::string zero_count = dir.file("zero_count.bin");
  write_file(zero_count, raw_shard(kShardMagicU16, 1, 0, 0));
  CHECK(contains(shard_error(zero_count, 256), "token count is 0, expected > 0"));

  const int32_t count = 10 + int32_t(rng() % 500);
  const size_t missing_tokens = 1 + rng() % 5;
  const std::string truncated = dir.file("truncated.bin");
  write_file(truncated,
             raw_shard(kShardMagicU16, 1, count, size_t(count - int32_t(missing_tokens)) * 2));
  message = shard_error(truncated, 256);
  CHECK(contains(message, "expected " + std::to_string(1024 + 2 * count) + " bytes"));
  CHECK(contains(message, "actual " + std::to_string(1024 + 2 * (count - int32_t(missing_tokens))) +
                              " bytes"));

  for (bool wide : {false, true}) {
    const int vocab = 2 + int(rng() % 1000);
    auto tokens = random_tokens(rng, 50 + rng() % 1000, uint32_t(vocab));
    const size_t index = rng() % tokens.size();
    tokens[index] = uint32_t(vocab) + uint32_t(rng() % 1000);
    const std::string path = dir.file(wide ? "range_wide.bin" : "range.bin");
    write_shard(path, tokens, wide);
    message = shard_error(path, vocab);
    const size_t offset = 1024 + index * (wide ? 4 : 2);
    CHECK(contains(message, "token " + std::to_string(tokens[index]) + " at index " +
                                std::to_string(index) + " (byte offset " + std::to_string(offset) +
                                ") is out of range for model.vocab_size " + std::to_string(vocab)));
    tokens[index] = 0;
    write_shard(path, tokens, wide);
    CHECK(read_shard(path, vocab) == tokens);
  }
}

TEST_CASE("a FIFO, a device or a directory is refused as a shard, never read", "[data]") {
  TestDir dir{"zt_test_data"};
  HangGuard guard(120);  // a blocking open fails the run instead of hanging it
  write_shard(dir.file("train_000.bin"), std::vector<uint32_t>(500, 7), false);
  REQUIRE(::mkfifo(dir.file("train_001.bin").c_str(), 0644) == 0);
  CHECK(contains(shard_error(dir.file("train_001.bin"), 256), "it is a named pipe (FIFO)"));
  CHECK(contains(shard_error("/dev/zero", 256), "it is a character device"));
  fs::create_directory(dir.file("train_002.bin"));
  CHECK(contains(shard_error(dir.file("train_002.bin"), 256), "it is a directory"));
  // A glob that matches the FIFO among real shards.
  const std::string message =
      error_of([&] { DataLoader(dir.file("train_*.bin"), 256, 2, 8, 0, 1, 1, 1, true); });
  CHECK(contains(message, dir.file("train_001.bin") + ": cannot read token shard: it is a named"));
}

TEST_CASE("expand_glob sorts matches and names a pattern that matches nothing", "[data]") {
  TestDir dir{"zt_test_data"};
  std::vector<std::string> names = {"b_001.bin", "a_000.bin", "b_000.bin", "c.txt"};
  std::shuffle(names.begin(), names.end(), test_rng(609));
  for (const auto& n : names) write_file(dir.file(n), std::string(1, '\1'));
  CHECK(expand_glob(dir.file("*.bin")) == std::vector<std::string>{dir.file("a_000.bin"),
                                                                   dir.file("b_000.bin"),
                                                                   dir.file("b_001.bin")});
  CHECK(expand_glob(dir.file("c.txt")) == std::vector<std::string>{dir.file("c.txt")});
  const std::string pattern = dir.file("val_*.bin");
  CHECK(error_of([&] { expand_glob(pattern); }) == pattern + ": glob matches no files");
  CHECK(error_of([&] { expand_glob(dir.file("x.bin")); }) == dir.file("x.bin") + ": no such file");
}

TEST_CASE("byte tokenizer and printable text", "[data]") {
  std::mt19937_64 rng = test_rng(607);
  std::string bytes(1 + rng() % 300, '\0');
  for (char& c : bytes) c = char(rng() % 256);
  auto tokenizer = make_tokenizer("byte");
  CHECK(tokenizer->vocab_size() == 256);
  const std::vector<int> ids = tokenizer->encode(bytes);
  CHECK(ids.size() == bytes.size());
  CHECK(tokenizer->decode(ids) == bytes);
  CHECK(contains(error_of([&] { tokenizer->decode({65, 256}); }), "id 256 at index 1"));

  // Random valid UTF-8 text (no control characters) passes unchanged.
  std::string text;
  for (int i = 0; i < 50; ++i)
    text += char(0x20 + rng() % 0x5F) + random_utf8(rng, 4, 0xA0) + "\n\t";
  CHECK(printable_utf8(text) == text);
  const std::string fffd = "\xEF\xBF\xBD";
  CHECK(printable_utf8("a\xFF"
                       "b") == "a" + fffd + "b");
  CHECK(printable_utf8("\xE2\x82"
                       "x") == fffd + "x");                     // truncated 3-byte sequence
  CHECK(printable_utf8("\xC0\xAF") == fffd + fffd);             // overlong form
  CHECK(printable_utf8("\xED\xA0\x80") == fffd + fffd + fffd);  // surrogate
  CHECK(printable_utf8("\x1B[2J\x07") == fffd + "[2J" + fffd);
}

namespace {

// A random token stream split over several shards, and each sequence's
// expected inputs/targets taken straight from the stream.
struct LoaderFixture {
  TestDir dir{"zt_test_data"};
  std::vector<uint32_t> stream;
  int T;
  std::map<std::vector<int>, int64_t> sequence_of_inputs;

  LoaderFixture(std::mt19937_64& rng, int seq_len, int64_t num_tokens, uint32_t vocab)
      : T(seq_len) {
    stream = random_tokens(rng, size_t(num_tokens), vocab);
    const bool wide = vocab > 65536;
    size_t begin = 0;
    for (int shard = 0; begin < stream.size(); ++shard) {
      size_t end = shard == 2 ? stream.size()
                              : std::min(stream.size(), begin + 1 + rng() % (stream.size() / 2));
      char name[32];
      std::snprintf(name, sizeof name, "train_%03d.bin", shard);
      write_shard(dir.file(name),
                  std::vector<uint32_t>(stream.begin() + long(begin), stream.begin() + long(end)),
                  wide);
      begin = end;
    }
    for (int64_t s = 0; s < (num_tokens - 1) / T; ++s)
      sequence_of_inputs[std::vector<int>(stream.begin() + s * T, stream.begin() + s * T + T)] = s;
  }
  std::string glob() const { return dir.file("train_*.bin"); }

  // The sequence ids of one micro-batch, checking each row against the stream.
  std::vector<int64_t> batch(DataLoader& loader, int B, int64_t step, int micro) {
    std::vector<int> inputs(size_t(B * T)), targets(size_t(B * T));
    loader.micro_batch(step, micro, inputs.data(), targets.data());
    std::vector<int64_t> ids;
    for (int b = 0; b < B; ++b) {
      std::vector<int> row(inputs.begin() + b * T, inputs.begin() + (b + 1) * T);
      auto found = sequence_of_inputs.find(row);
      REQUIRE(found != sequence_of_inputs.end());
      const int64_t s = found->second;
      for (int t = 0; t < T; ++t)
        REQUIRE(targets[size_t(b * T + t)] == int(stream[size_t(s * T + t + 1)]));
      ids.push_back(s);
    }
    return ids;
  }
};

}  // namespace

TEST_CASE("loader: deterministic, seeded, epoch-wise permutations, shifted targets", "[data]") {
  std::mt19937_64 rng = test_rng(603);
  const int T = 4 + int(rng() % 12);
  LoaderFixture data(rng, T, 2000 + int64_t(rng() % 3000), 65536);
  const int64_t S = (int64_t(data.stream.size()) - 1) / T;

  DataLoader a(data.glob(), 65536, 1, T, 0, 1, 1, 42, true),
      b(data.glob(), 65536, 1, T, 0, 1, 1, 42, true);
  DataLoader other_seed(data.glob(), 65536, 1, T, 0, 1, 1, 43, true);
  DataLoader in_order(data.glob(), 65536, 1, T, 0, 1, 1, 42, false);
  CHECK(a.num_sequences() == S);
  CHECK(a.num_tokens() == int64_t(data.stream.size()));
  std::vector<int64_t> epoch0, epoch1, from_b, from_other;
  for (int64_t g = 0; g < 2 * S; ++g) {
    (g < S ? epoch0 : epoch1).push_back(data.batch(a, 1, g, 0)[0]);
    if (g < S) {
      from_b.push_back(data.batch(b, 1, g, 0)[0]);
      from_other.push_back(data.batch(other_seed, 1, g, 0)[0]);
    }
  }
  CHECK(from_b == epoch0);
  CHECK(from_other != epoch0);
  CHECK(epoch1 != epoch0);
  for (auto* epoch : {&epoch0, &epoch1}) {
    std::vector<int64_t> sorted = *epoch;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> all;
    for (int64_t s = 0; s < S; ++s) all.push_back(s);
    CHECK(sorted == all);  // every sequence exactly once per epoch
  }
  // Going back to an earlier step gives the same batch again (resume).
  CHECK(data.batch(a, 1, 3, 0)[0] == epoch0[3]);
  for (int64_t g : {int64_t(0), S - 1, S, 2 * S + 5})
    CHECK(data.batch(in_order, 1, g, 0)[0] == g % S);
}

TEST_CASE("loader: W ranks read exactly what one rank reads with W times the accumulation",
          "[data]") {
  std::mt19937_64 rng = test_rng(604);
  const int T = 3 + int(rng() % 8);
  const uint32_t vocab = rng() % 2 ? 65536 : 70000;  // both storage widths
  LoaderFixture data(rng, T, 1500 + int64_t(rng() % 1500), vocab);
  for (int W : {2, 3, 4}) {
    const int B = 1 + int(rng() % 4), accum = 1 + int(rng() % 3);
    const uint64_t loader_seed = rng();
    CAPTURE(W, B, accum);
    DataLoader single(data.glob(), int(vocab), B, T, 0, 1, W * accum, loader_seed, true);
    std::vector<DataLoader> ranks;
    for (int r = 0; r < W; ++r)
      ranks.emplace_back(data.glob(), int(vocab), B, T, r, W, accum, loader_seed, true);
    // Steps at the start, across the first epoch boundary, and further on.
    const int64_t per_step = int64_t(W) * accum * B;
    for (int64_t step : {int64_t(0), single.num_sequences() / per_step, int64_t(rng() % 1000)}) {
      std::vector<int64_t> expected, got;
      for (int m = 0; m < W * accum; ++m)
        for (int64_t s : data.batch(single, B, step, m)) expected.push_back(s);
      for (int r = 0; r < W; ++r)
        for (int m = 0; m < accum; ++m)
          for (int64_t s : data.batch(ranks[size_t(r)], B, step, m)) got.push_back(s);
      std::sort(expected.begin(), expected.end());
      std::sort(got.begin(), got.end());
      CHECK(got == expected);
    }
  }
}

TEST_CASE("loader: argument and data errors", "[data]") {
  std::mt19937_64 rng = test_rng(608);
  LoaderFixture data(rng, 8, 100, 256);
  const std::string glob = data.glob();
  // The files are checked before the other arguments.
  std::string message = error_of([&] { DataLoader(glob, 100, 0, 8, 0, 1, 1, 1, true); });
  CHECK(contains(message, "is out of range for model.vocab_size 100"));
  message = error_of([&] { DataLoader(glob, 256, 13, 8, 0, 1, 1, 1, true); });
  CHECK(message.rfind(glob + ": ", 0) == 0);
  CHECK(contains(message, "12 sequences"));
  CHECK(contains(error_of([&] { DataLoader(glob, 256, 2, 8, 2, 2, 1, 1, true); }),
                 "rank 2 is outside [0, 2)"));
  CHECK(contains(
      error_of([&] { DataLoader(data.dir.file("none_*.bin"), 256, 2, 8, 0, 1, 1, 1, true); }),
      "matches no files"));
  DataLoader loader(glob, 256, 2, 8, 0, 1, 2, 1, true);
  std::vector<int> inputs(16), targets(16);
  CHECK(contains(error_of([&] { loader.micro_batch(0, 2, inputs.data(), targets.data()); }),
                 "micro-step 2"));
}

namespace {

// Random "sentences" of a few hundred words, one per line, all lines distinct.
std::string random_text(std::mt19937_64& rng, int lines) {
  static const char* words[] = {"the",  "and",   "of",     "light",    "water",  "earth",
                                "said", "unto",  "him",    "day",      "night",  "firmament",
                                "seed", "fruit", "living", "creature", "waters", "heaven"};
  std::string text;
  for (int i = 0; i < lines; ++i) {
    int n = 2 + int(rng() % 12);
    for (int w = 0; w < n; ++w) text += std::string(w ? " " : "") + words[rng() % 18];
    text += " " + std::to_string(i) + ".\n";
  }
  return text;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream s(text);
  for (std::string line; std::getline(s, line);) lines.push_back(line);
  return lines;
}

// Decoded contents of every shard matching a glob, in order.
std::string decoded(const std::string& glob, const Tokenizer& tokenizer) {
  std::string text;
  for (const auto& file : expand_glob(glob)) {
    auto tokens = read_shard(file, tokenizer.vocab_size());
    text += tokenizer.decode(std::vector<int>(tokens.begin(), tokens.end()));
  }
  return text;
}

// The output shards hold every input line once, val lines spread out.
void check_split(const std::string& input, const std::string& train, const std::string& val) {
  const auto lines = split_lines(input), train_lines = split_lines(train),
             val_lines = split_lines(val);
  REQUIRE(train_lines.size() + val_lines.size() == lines.size());
  size_t t = 0, v = 0, first_val = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    if (v < val_lines.size() && lines[i] == val_lines[v]) {
      first_val = std::min(first_val, i);
      ++v;
    } else {
      REQUIRE(t < train_lines.size());
      REQUIRE(lines[i] == train_lines[t++]);
    }
  }
  CHECK(v == val_lines.size());
  CHECK(val_lines.size() >= lines.size() / 40);
  CHECK(val_lines.size() <= lines.size() / 10);
  CHECK(first_val < lines.size() / 2);
}

}  // namespace

TEST_CASE("prepare: byte shards, usage errors, nothing left on failure", "[data]") {
  std::mt19937_64 rng = test_rng(605);
  TestDir dir{"zt_test_data"};
  const std::string input = dir.file("input.txt"), out = dir.file("out/byte");
  const std::string text = random_text(rng, 300 + int(rng() % 500));
  write_file(input, text);
  const int64_t shard_tokens = 1000 + int64_t(rng() % 3000);
  CaptureOutput output;
  REQUIRE(run_prepare({"--input", input, "--out", out, "--tokenizer", "byte", "--shard-tokens",
                       std::to_string(shard_tokens)}) == 0);
  const auto train_files = expand_glob(out + "/train_*.bin");
  CHECK(train_files.front() == out + "/train_000.bin");
  for (size_t i = 0; i + 1 < train_files.size(); ++i)
    CHECK(read_shard(train_files[i], 256).size() == size_t(shard_tokens));
  ByteTokenizer bytes;
  check_split(text, decoded(out + "/train_*.bin", bytes), decoded(out + "/val_*.bin", bytes));
  const auto printed = split_lines(output.out.str());
  CHECK(printed.size() == train_files.size() + expand_glob(out + "/val_*.bin").size() + 1);
  CHECK(printed.front() ==
        "wrote " + out + "/train_000.bin: " + std::to_string(shard_tokens) + " tokens (uint16)");
  CHECK(printed.back() == "use: data.train=" + out + "/train_*.bin data.val=" + out +
                              "/val_*.bin data.tokenizer=byte");

  // Bad arguments: exit 2 and one usage line; an existing output is refused.
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"--out", out, "--tokenizer", "byte"},
           {"--input", input, "--out", out, "--tokenizer", "bpe"},
           {"--input", input, "--out", out, "--tokenizer", "word"},
           {"--input", input, "--out", out, "--tokenizer", "byte", "--val-fraction", "1.5"},
           {"--input", input, "--out", out, "--tokenizer", "byte", "--shard-tokens", "1.5"},
           {"--input", input, "--out", out, "--tokenizer", "byte", "--colour"}}) {
    output.err.str("");
    CHECK(run_prepare(args) == 2);
    CHECK(split_lines(output.err.str()).size() == 1);
    CHECK(contains(output.err.str(), "usage: zerotrain prepare"));
  }
  output.err.str("");
  CHECK(run_prepare({"--input", input, "--out", out, "--tokenizer", "byte"}) == 2);
  CHECK(contains(output.err.str(), out + ": already exists"));
  const std::string missing_out = dir.file("out/missing");
  CHECK(run_prepare(
            {"--input", dir.file("nope.txt"), "--out", missing_out, "--tokenizer", "byte"}) == 2);
  CHECK(contains(output.err.str(), "nope.txt: the input does not exist"));
  // A FIFO or a directory as the input: named by its kind, before any temporary
  // directory exists (a FIFO used to block the open and leave one behind).
  const std::string fifo = dir.file("pipe.txt");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  output.err.str("");
  CHECK(run_prepare({"--input", fifo, "--out", missing_out, "--tokenizer", "byte"}) == 2);
  CHECK(contains(output.err.str(), "pipe.txt: the input is a named pipe (FIFO)"));
  output.err.str("");
  CHECK(run_prepare({"--input", "/dev/zero", "--out", missing_out, "--tokenizer", "byte"}) == 2);
  CHECK(contains(output.err.str(), "/dev/zero: the input is a character device"));
  CHECK(std::distance(fs::directory_iterator(dir.file("out")), fs::directory_iterator()) == 1);
}

TEST_CASE("prepare: bpe tokenizer model round-trips", "[data]") {
  TestDir dir{"zt_test_data"};
  const std::string input = dir.file("input.txt"), out = dir.file("bpe");
  if (!bpe_available()) {
    CaptureOutput output;
    write_file(input, "a\n");
    CHECK(run_prepare({"--input", input, "--out", out, "--tokenizer", "bpe", "--vocab", "300"}) ==
          2);
    CHECK(contains(output.err.str(), "unavailable in this build"));
    CHECK(contains(error_of([&] { make_tokenizer(dir.file("tokenizer.model")); }),
                   "unavailable in this build"));
    return;
  }
  std::mt19937_64 rng = test_rng(606);
  const std::string text = random_text(rng, 400 + int(rng() % 400));
  write_file(input, text);
  const int vocab = 320 + int(rng() % 60);
  {
    CaptureOutput output;
    REQUIRE(run_prepare({"--input", input, "--out", out, "--tokenizer", "bpe", "--vocab",
                         std::to_string(vocab)}) == 0);
    CHECK(split_lines(output.out.str()).back() ==
          "use: data.train=" + out + "/train_*.bin data.val=" + out +
              "/val_*.bin data.tokenizer=" + out + "/tokenizer.model");
  }
  {
    // A vocab too small for the byte pieces fails after the work directory
    // exists: nothing may be left behind.
    CaptureOutput output;
    CHECK(run_prepare({"--input", input, "--out", dir.file("small"), "--tokenizer", "bpe",
                       "--vocab", "100"}) == 2);
    CHECK(contains(output.err.str(), "sentencepiece BPE training (vocab 100) failed"));
    CHECK(split_lines(output.err.str()).size() == 1);
    CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) ==
          2);  // input.txt, bpe/
  }
  auto tokenizer = make_tokenizer(out + "/tokenizer.model");
  CHECK(tokenizer->vocab_size() == vocab);
  check_split(text, decoded(out + "/train_*.bin", *tokenizer),
              decoded(out + "/val_*.bin", *tokenizer));
  // Any UTF-8 text round-trips, characters never seen in training through
  // byte fallback.
  const std::string line = split_lines(text)[rng() % 400];
  CHECK(tokenizer->encode(line).size() < line.size());  // merges were learned
  const std::string sample = line + "\n\t" + random_utf8(rng, 30, 1);
  CHECK(tokenizer->decode(tokenizer->encode(sample)) == sample);
  CHECK(contains(error_of([&] { tokenizer->decode({vocab}); }),
                 "out of range for vocab size " + std::to_string(vocab)));
}
