// `zerotrain prepare`, line-based splits (byte, bpe) and the dispatch to the
// document pipeline (gpt2). The line path streams its input line by line
// (twice, three times for bpe: count lines, write the BPE training text,
// tokenize), so its size is bounded by disk, not memory; only one shard's
// tokens are buffered at a time.
#include "data/prepare.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>

#include "data/input/input_file.h"
#include "data/interruption.h"
#include "data/prepare_documents.h"
#include "data/shard.h"
#include "data/shard_writer.h"
#include "data/tokenizer.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

// Calls fn for each line of the file, with its '\n' (absent only on a last
// line that has none), so concatenating the lines gives back the file.
void for_each_line(const std::string& path, const std::function<void(const std::string&)>& fn) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": cannot open for reading");
  std::string line;
  while (std::getline(in, line)) {
    check_interrupted();
    if (!in.eof()) line.push_back('\n');
    fn(line);
  }
  if (in.bad()) throw DataError(path + ": read error");
}

// Blocks of up to 100 lines; short texts get smaller blocks, down to one
// line, so that validation is about ten blocks from all over the text rather
// than one block at its end.
class SplitPlan {
 public:
  SplitPlan(int64_t num_lines, double val_fraction) : val_fraction_(val_fraction) {
    const int64_t min_blocks = int64_t(std::ceil(10.0 / val_fraction));
    block_lines_ = std::max<int64_t>(1, std::min<int64_t>(100, num_lines / min_blocks));
  }
  bool is_val(int64_t line) const {
    return is_validation_chunk(line / block_lines_, val_fraction_);
  }

 private:
  double val_fraction_;
  int64_t block_lines_;
};

void print_shards(std::ostream& out, const std::string& dir,
                  const std::vector<std::pair<std::string, int64_t>>& shards, bool wide) {
  for (const auto& shard : shards)
    out << "wrote " << dir << "/" << shard.first << ": " << shard.second << " tokens ("
        << (wide ? "uint32" : "uint16") << ")\n";
}

void prepare_lines(const PrepareOptions& o, std::ostream& out) {
  if (o.tokenizer == "bpe" && !bpe_available())
    throw DataError(
        "--tokenizer bpe: the BPE (sentencepiece) tokenizer is unavailable in this build "
        "(built without libsentencepiece); use --tokenizer byte");
  if (const std::string problem = input_path_problem(o.input); !problem.empty()) {
    std::error_code ec;
    if (fs::is_directory(o.input, ec))
      throw DataError(o.input + ": a directory; --tokenizer " + o.tokenizer +
                      " reads one text file (folders and globs need --tokenizer gpt2)");
    throw DataError(o.input + ": the input " + problem);
  }
  WorkDirectory work(o.out);

  int64_t num_lines = 0;
  for_each_line(o.input, [&](const std::string&) { ++num_lines; });
  if (num_lines == 0) throw DataError(o.input + ": file is empty");
  const SplitPlan split(num_lines, o.val_fraction);
  int64_t val_lines = 0;
  for (int64_t line = 0; line < num_lines; ++line) val_lines += split.is_val(line);
  if (val_lines == 0 || val_lines == num_lines)
    throw DataError(o.input + ": " + std::to_string(num_lines) +
                    " lines are too few to split with --val-fraction " +
                    std::to_string(o.val_fraction));

  std::unique_ptr<Tokenizer> tokenizer;
  if (o.tokenizer == "bpe") {
    const std::string text = work.path() + "/bpe_train_text.txt";
    {
      std::ofstream train_text(text, std::ios::binary);
      int64_t line = 0;
      for_each_line(o.input, [&](const std::string& s) {
        if (!split.is_val(line++)) train_text << s;
      });
      if (!train_text.flush()) throw DataError(text + ": write failed");
    }
    train_bpe(text, work.path() + "/tokenizer", o.vocab);
    fs::remove(text);
    tokenizer = make_tokenizer(work.path() + "/tokenizer.model");
  } else {
    tokenizer = make_tokenizer("byte");
  }

  const bool wide = tokenizer->vocab_size() > 65536;
  ShardWriter train(work.path(), "train", o.shard_tokens, wide),
      val(work.path(), "val", o.shard_tokens, wide);
  int64_t line = 0;
  for_each_line(o.input, [&](const std::string& s) {
    (split.is_val(line++) ? val : train).add(tokenizer->encode(s));
  });
  auto train_shards = train.finish();
  auto val_shards = val.finish();
  work.commit();

  print_shards(out, o.out, train_shards, wide);
  print_shards(out, o.out, val_shards, wide);
  std::string tokenizer_value = "byte";
  if (o.tokenizer == "bpe") {
    tokenizer_value = o.out + "/tokenizer.model";
    out << "wrote " << tokenizer_value << ": sentencepiece BPE, vocab " << tokenizer->vocab_size()
        << "\n";
    out << "wrote " << o.out << "/tokenizer.vocab\n";
  }
  out << "use: data.train=" << o.out << "/train_*.bin data.val=" << o.out
      << "/val_*.bin data.tokenizer=" << tokenizer_value << std::endl;
}

}  // namespace

bool is_validation_chunk(int64_t k, double val_fraction) {
  return std::floor(double(k + 1) * val_fraction) > std::floor(double(k) * val_fraction);
}

int64_t split_chunk_tokens(int64_t input_bytes, double val_fraction) {
  const int64_t min_chunks = int64_t(std::ceil(10.0 / val_fraction));
  return std::max<int64_t>(1, std::min<int64_t>(int64_t(1) << 20, input_bytes / (4 * min_chunks)));
}

void prepare_corpus(const PrepareOptions& o, std::ostream& out, std::ostream& progress) {
  if (o.tokenizer == "byte" || o.tokenizer == "bpe") prepare_lines(o, out);
  else prepare_documents(o, out, progress);
}

}  // namespace zt
