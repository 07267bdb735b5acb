// `prepare --tokenizer gpt2` (data/prepare_documents, data/text_documents):
// the shards hold exactly <|endoftext|> + encode(document) for every document
// in order, split by the documented chunk rule, whatever the thread count;
// documents are files or blank-line-separated paragraphs; long documents are
// cut only where the ids do not change; bad inputs leave nothing behind.
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "data/gpt2_pretokenizer.h"
#include "data/gpt2_tokenizer.h"
#include "data/prepare.h"
#include "data/shard.h"
#include "data/text_documents.h"
#include "tests/support/catch.h"
#include "tests/support/test_support.h"
#include "train/cli/commands.h"
#include "train/config/config.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

// Random prose-like text: words, punctuation, numbers, non-ASCII, line breaks.
std::string random_text(std::mt19937_64& rng, size_t bytes) {
  static const std::vector<std::string> words = {"the",
                                                 "LORD",
                                                 "said",
                                                 "unto",
                                                 "him",
                                                 "it's",
                                                 "they'll",
                                                 "1611",
                                                 "3.5",
                                                 "caf\xC3\xA9",
                                                 "\xE6\x9D\xB1\xE4\xBA\xAC",
                                                 "\xF0\x9F\x98\x80",
                                                 ",",
                                                 ".",
                                                 ";",
                                                 "  ",
                                                 "\t",
                                                 "--",
                                                 "<|endoftext|>"};
  std::string text;
  while (text.size() < bytes) {
    text += words[rng() % words.size()];
    text += rng() % 9 == 0 ? "\n" : " ";
  }
  return text;
}

const Gpt2Tokenizer* gpt2_or_skip(const char* test) {
  static std::unique_ptr<Gpt2Tokenizer> tokenizer;
  if (!tokenizer)
    for (const std::string& path : gpt2_vocab_candidates())
      if (fs::exists(path)) {
        tokenizer.reset(new Gpt2Tokenizer(path));
        break;
      }
  if (!tokenizer || !gpt2_encoding_available()) {
    std::printf("SKIPPED: [data] %s: %s\n", test,
                tokenizer ? "built without PCRE2" : "no GPT-2 vocabulary (`make` fetches it)");
    SUCCEED("GPT-2 tokenizer unavailable");
    return nullptr;
  }
  return tokenizer.get();
}

std::vector<uint32_t> read_split(const std::string& glob) {
  std::vector<uint32_t> tokens;
  for (const std::string& shard : expand_glob(glob)) {
    const std::vector<uint32_t> t = read_shard(shard, Gpt2Tokenizer::kVocabSize);
    tokens.insert(tokens.end(), t.begin(), t.end());
  }
  return tokens;
}

// The shards prepare must write for these documents: the llm.c stream, cut
// into chunks, each chunk to its split.
void check_shards(const Gpt2Tokenizer& t, const std::vector<std::string>& documents,
                  int64_t input_bytes, double val_fraction, const std::string& out) {
  std::vector<uint32_t> train, val;
  const int64_t chunk = split_chunk_tokens(input_bytes, val_fraction);
  int64_t g = 0;
  for (const std::string& doc : documents) {
    std::vector<int> ids{Gpt2Tokenizer::kEndOfText};
    t.encode_append(doc, &ids);
    for (int id : ids) (is_validation_chunk(g++ / chunk, val_fraction) ? val : train).push_back(id);
  }
  CHECK(read_split(out + "/train_*.bin") == train);
  CHECK(read_split(out + "/val_*.bin") == val);
  CHECK(!val.empty());
}

int64_t total_bytes(const std::vector<std::string>& files) {
  int64_t n = 0;
  for (const std::string& f : files) n += int64_t(fs::file_size(f));
  return n;
}

}  // namespace

TEST_CASE("prepare gpt2: a folder of files, one document each, on any number of threads",
          "[data]") {
  const Gpt2Tokenizer* t = gpt2_or_skip("prepare gpt2 folder");
  if (!t) return;
  std::mt19937_64 rng(test_seed());
  TestDir dir{"zt_test_prepare"};
  const std::string in = dir.file("corpus");
  // A document over 1 MiB is cut into pieces for the encoding threads.
  write_file(in + "/b/long.txt", random_text(rng, (3 << 19) + rng() % 100000));
  write_file(in + "/a.txt", random_text(rng, 1000 + rng() % 5000));
  write_file(in + "/b/c.md", random_text(rng, 10 + rng() % 500));
  write_file(in + "/empty.txt", "");
  write_file(in + "/.hidden", "never read");
  write_file(in + "/.git/config", "never read");
  write_file(in + "/z.txt", "\xFF\xFE not UTF-8 \xC0\xAF");
  const std::vector<std::string> files = list_text_inputs(in);
  REQUIRE(files == std::vector<std::string>{in + "/a.txt", in + "/b/c.md", in + "/b/long.txt",
                                            in + "/empty.txt", in + "/z.txt"});
  std::vector<std::string> documents;
  for (const std::string& f : files)
    if (!read_file(f).empty()) documents.push_back(read_file(f));

  std::string previous;
  const int64_t shard_tokens = 50000 + int64_t(rng() % 100000);
  for (int threads : {1, 3}) {
    PrepareOptions o;
    o.input = in;
    o.out = dir.file("out" + std::to_string(threads));
    o.tokenizer = t->vocab_path();
    o.threads = threads;
    o.shard_tokens = shard_tokens;
    std::stringstream out, progress;
    prepare_corpus(o, out, progress);
    INFO(out.str());
    CHECK(out.str().find("encoded 5 files, 4 documents") == 0);
    CHECK(out.str().find("use: data.train=" + o.out + "/train_*.bin data.val=" + o.out +
                         "/val_*.bin data.tokenizer=" + t->vocab_path()) != std::string::npos);
    CHECK(progress.str().empty());  // no progress line on a short input
    check_shards(*t, documents, total_bytes(files), o.val_fraction, o.out);
    CHECK(expand_glob(o.out + "/train_*.bin").size() > 1);
    const std::string both =
        read_file(o.out + "/train_000.bin") + read_file(o.out + "/val_000.bin");
    if (!previous.empty()) CHECK(both == previous);
    previous = both;
  }

  // A glob, and a single file, name the same kind of input.
  PrepareOptions o;
  o.input = in + "/b/*";
  o.out = dir.file("glob");
  o.tokenizer = "gpt2";
  o.val_fraction = 0.2;
  std::stringstream out, progress;
  prepare_corpus(o, out, progress);
  check_shards(*t, {read_file(in + "/b/c.md"), read_file(in + "/b/long.txt")},
               total_bytes({in + "/b/c.md", in + "/b/long.txt"}), 0.2, o.out);
}

TEST_CASE("prepare gpt2: paragraphs separated by blank lines are documents", "[data]") {
  const Gpt2Tokenizer* t = gpt2_or_skip("prepare gpt2 paragraphs");
  if (!t) return;
  std::mt19937_64 rng(test_seed());
  TestDir dir{"zt_test_prepare"};
  // Paragraphs of 1-4 lines; between them runs of blank lines: empty, spaces,
  // tabs, CR (CRLF files); an indented first line keeps its indentation.
  std::string text = "\n \n";
  std::vector<std::string> expected;
  const int paragraphs = 300 + int(rng() % 200);
  for (int p = 0; p < paragraphs; ++p) {
    std::string doc;
    const int lines = 1 + int(rng() % 4);
    for (int l = 0; l < lines; ++l) {
      std::string line = (rng() % 5 == 0 ? "  w" : "w") + random_text(rng, 1 + rng() % 80);
      for (char& c : line)
        if (c == '\n') c = ' ';
      doc += line + (rng() % 3 == 0 ? "\r\n" : "\n");
    }
    const bool last = p + 1 == paragraphs;
    if (last) doc.pop_back();  // no line break at the end of the file
    expected.push_back(doc);
    text += doc;
    if (!last) {
      const int blanks = 1 + int(rng() % 3);
      for (int b = 0; b < blanks; ++b)
        text += std::vector<std::string>{"\n", " \t\n", "\r\n"}[rng() % 3];
    }
  }
  write_file(dir.file("p.txt"), text);
  PrepareOptions o;
  o.input = dir.file("p.txt");
  o.out = dir.file("out");
  o.tokenizer = t->vocab_path();
  o.documents = "paragraphs";
  o.threads = 2;
  std::stringstream out, progress;
  prepare_corpus(o, out, progress);
  CHECK(out.str().find("encoded 1 file, " + std::to_string(paragraphs) + " documents") == 0);
  check_shards(*t, expected, int64_t(text.size()), o.val_fraction, o.out);
}

TEST_CASE("prepare gpt2: document pieces, cut points and the bound on memory", "[data]") {
  std::mt19937_64 rng(test_seed());
  TestDir dir{"zt_test_prepare"};
  const std::string a = random_text(rng, 5000), b = "x";
  write_file(dir.file("a"), a);
  write_file(dir.file("b"), b);
  DocumentReader reader({dir.file("a"), dir.file("b")}, DocumentMode::kFile, 300,
                        &Gpt2PreTokenizer::safe_cut);
  std::vector<std::string> documents;
  TextPiece piece;
  int pieces = 0;
  while (reader.next(&piece)) {
    ++pieces;
    if (piece.starts_document) documents.emplace_back();
    REQUIRE(!documents.empty());
    documents.back() += piece.text;
    CHECK(piece.text.size() < 300 + 200);
  }
  CHECK(documents == std::vector<std::string>{a, b});
  CHECK(pieces > 10);
  CHECK(reader.documents() == 2);
  CHECK(reader.bytes_read() == int64_t(a.size() + b.size()));

  // Text without a safe cut: an error naming the file and the bytes, not an unbounded buffer.
  write_file(dir.file("cjk"), std::string(2000, '\xE3') /* never a cut: no ASCII */);
  DocumentReader bounded({dir.file("cjk")}, DocumentMode::kFile, 100, &Gpt2PreTokenizer::safe_cut,
                         1000);
  require_parts(error_of([&] {
                  while (bounded.next(&piece)) {
                  }
                }),
                {dir.file("cjk") + ": no place to cut the text between bytes 0 and 2000"});
}

TEST_CASE("prepare gpt2: bad inputs and arguments", "[data]") {
  TestDir dir{"zt_test_prepare"};
  auto run = [&](std::vector<std::string> args) {
    return error_of([&] { run_prepare_command(args); });
  };
  const std::string out = dir.file("out");
  write_file(dir.file("hidden/.a"), "x");
  require_parts(
      run({"--input", dir.file("x"), "--out", out, "--tokenizer", "gpt2", "--vocab", "9"}),
      {"--vocab applies to --tokenizer bpe", "usage: zerotrain prepare"});
  require_parts(
      run({"--input", dir.file("x"), "--out", out, "--tokenizer", "gpt2", "--documents", "words"}),
      {"--documents must be file or paragraphs, got 'words'"});
  require_parts(
      run({"--input", dir.file("x"), "--out", out, "--tokenizer", "byte", "--threads", "2"}),
      {"--documents and --threads apply to --tokenizer gpt2"});
  require_parts(
      run({"--input", dir.file("x"), "--out", out, "--tokenizer", "gpt2", "--threads", "0"}),
      {"--threads expects an integer in [1, 1024], got '0'"});
  require_parts(run({"--input", dir.file("x"), "--out", out, "--tokenizer", "gpt3"}),
                {"--tokenizer must be byte, bpe, gpt2 or a .tiktoken file, got 'gpt3'"});
  if (!gpt2_or_skip("prepare gpt2 errors")) {
    require_parts(run({"--input", dir.file("x"), "--out", out, "--tokenizer", "gpt2"}),
                  {gpt2_encoding_available() ? "no GPT-2 vocabulary"
                                             : "GPT-2 encoding is unavailable in this build"});
    return;
  }
  require_parts(run({"--input", dir.file("none*.txt"), "--out", out, "--tokenizer", "gpt2"}),
                {"none*.txt", "matches no files"});
  require_parts(run({"--input", dir.file("hidden"), "--out", out, "--tokenizer", "gpt2"}),
                {"hidden: the directory holds no files"});
  write_file(dir.file("empty/a.txt"), "");
  require_parts(run({"--input", dir.file("empty"), "--out", out, "--tokenizer", "gpt2"}),
                {"no text to encode"});
  write_file(dir.file("tiny.txt"), "Hello");
  require_parts(run({"--input", dir.file("tiny.txt"), "--out", out, "--tokenizer", "gpt2"}),
                {"tiny.txt: 2 tokens are too few to split"});
  write_file(out + "/keep", "x");
  require_parts(run({"--input", dir.file("tiny.txt"), "--out", out, "--tokenizer", "gpt2"}),
                {out + ": already exists"});
  // Nothing but the inputs and the refused output is left in the directory.
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(dir.path))
    left.push_back(entry.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"empty", "hidden", "out", "tiny.txt"});
}

}  // namespace zt
