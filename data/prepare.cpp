// `zerotrain prepare`. The input is streamed line by line (twice, three times
// for bpe: count lines, write the BPE training text, tokenize), so its size is
// bounded by disk, not memory; only one shard's tokens are buffered at a time.
#include "data/prepare.h"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "data/shard.h"
#include "data/tokenizer.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

const char kUsage[] =
    "usage: zerotrain prepare --input FILE --out DIR --tokenizer byte|bpe [--vocab N] "
    "[--val-fraction F (default 0.05)] [--shard-tokens N (default 1e8)]";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct PrepareOptions {
  std::string input;
  std::string out;
  std::string tokenizer;
  int vocab = 0;  // 0: not given
  double val_fraction = 0.05;
  int64_t shard_tokens = 100000000;
};

double parse_number(const std::string& option, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(value))
    throw UsageError(option + " expects a number, got '" + text + "'");
  return value;
}

// Whole numbers may be written as 1e8; 1.5 is refused rather than rounded.
int64_t parse_count(const std::string& option, const std::string& text, int64_t min, int64_t max) {
  double value = parse_number(option, text);
  if (value != std::floor(value) || value < double(min) || value > double(max))
    throw UsageError(option + " expects a whole number in [" + std::to_string(min) + ", " +
                     std::to_string(max) + "], got '" + text + "'");
  return int64_t(value);
}

PrepareOptions parse_options(const std::vector<std::string>& args) {
  PrepareOptions o;
  bool have_vocab = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string key = args[i], value;
    size_t eq = key.find('=');
    if (key.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    } else {
      if (key.rfind("--", 0) != 0) throw UsageError("unexpected argument '" + key + "'");
      if (i + 1 >= args.size()) throw UsageError(key + " needs a value");
      value = args[++i];
    }
    if (key == "--input") o.input = value;
    else if (key == "--out") o.out = value;
    else if (key == "--tokenizer") o.tokenizer = value;
    else if (key == "--vocab") {
      o.vocab = int(parse_count(key, value, 1, INT_MAX));
      have_vocab = true;
    } else if (key == "--val-fraction") o.val_fraction = parse_number(key, value);
    else if (key == "--shard-tokens") o.shard_tokens = parse_count(key, value, 1, INT32_MAX);
    else throw UsageError("unknown option '" + key + "'");
  }
  if (o.input.empty()) throw UsageError("--input FILE is required");
  if (o.out.empty()) throw UsageError("--out DIR is required");
  if (o.tokenizer != "byte" && o.tokenizer != "bpe")
    throw UsageError("--tokenizer must be 'byte' or 'bpe', got '" + o.tokenizer + "'");
  if (o.tokenizer == "bpe" && !have_vocab) throw UsageError("--tokenizer bpe needs --vocab N");
  if (o.tokenizer == "byte" && have_vocab && o.vocab != 256)
    throw UsageError("--tokenizer byte has vocab 256, got --vocab " + std::to_string(o.vocab));
  if (!(o.val_fraction > 0 && o.val_fraction < 1))
    throw UsageError("--val-fraction must be in (0, 1), got " + std::to_string(o.val_fraction));
  while (o.out.size() > 1 && o.out.back() == '/') o.out.pop_back();
  return o;
}

// Calls fn for each line of the file, with its '\n' (absent only on a last
// line that has none), so concatenating the lines gives back the file.
void for_each_line(const std::string& path, const std::function<void(const std::string&)>& fn) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": cannot open for reading");
  std::string line;
  while (std::getline(in, line)) {
    if (!in.eof()) line.push_back('\n');
    fn(line);
  }
  if (in.bad()) throw DataError(path + ": read error");
}

// Blocks of up to 100 lines; block b is validation when floor((b+1)F) >
// floor(bF), which spreads a fraction F of the blocks evenly through the text
// (F = 0.05: every 20th block). Short texts get smaller blocks, down to one
// line, so that validation is about ten blocks from all over the text rather
// than one block at its end.
class SplitPlan {
 public:
  SplitPlan(int64_t num_lines, double val_fraction) : val_fraction_(val_fraction) {
    const int64_t min_blocks = int64_t(std::ceil(10.0 / val_fraction));
    block_lines_ = std::max<int64_t>(1, std::min<int64_t>(100, num_lines / min_blocks));
  }
  bool is_val(int64_t line) const {
    const int64_t block = line / block_lines_;
    return std::floor(double(block + 1) * val_fraction_) >
           std::floor(double(block) * val_fraction_);
  }

 private:
  double val_fraction_;
  int64_t block_lines_;
};

// Buffers one split's tokens and writes a shard each time shard_tokens are
// collected; finish() writes the rest and names the shards with enough digits
// (at least 3) that their sorted order is their numeric order.
class ShardWriter {
 public:
  ShardWriter(std::string dir, std::string prefix, int64_t shard_tokens, bool wide)
      : dir_(std::move(dir)), prefix_(std::move(prefix)), shard_tokens_(size_t(shard_tokens)),
        wide_(wide) {}

  void add(const std::vector<int>& ids) {
    for (int id : ids) {
      buffer_.push_back(uint32_t(id));
      if (buffer_.size() == shard_tokens_) flush();
    }
  }

  // Returns the shards' file names (relative to dir) and token counts.
  std::vector<std::pair<std::string, int64_t>> finish() {
    if (!buffer_.empty()) flush();
    const int digits =
        std::max<int>(3, int(std::to_string(counts_.empty() ? 0 : counts_.size() - 1).size()));
    std::vector<std::pair<std::string, int64_t>> shards;
    for (size_t i = 0; i < counts_.size(); ++i) {
      std::string name = shard_name(i, digits);
      if (digits != 3) fs::rename(dir_ + "/" + shard_name(i, 3), dir_ + "/" + name);
      shards.emplace_back(name, counts_[i]);
    }
    return shards;
  }

 private:
  std::string shard_name(size_t index, int digits) const {
    std::string number = std::to_string(index);
    return prefix_ + "_" + std::string(size_t(std::max<int>(0, digits - int(number.size()))), '0') +
           number + ".bin";
  }
  void flush() {
    write_shard(dir_ + "/" + shard_name(counts_.size(), 3), buffer_, wide_);
    counts_.push_back(int64_t(buffer_.size()));
    buffer_.clear();
  }

  std::string dir_, prefix_;
  size_t shard_tokens_;
  bool wide_;
  std::vector<uint32_t> buffer_;
  std::vector<int64_t> counts_;
};

// Removes the working directory unless the result was moved into place.
struct TemporaryDirectory {
  std::string path;
  ~TemporaryDirectory() {
    if (path.empty()) return;
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

void prepare(const PrepareOptions& o) {
  if (o.tokenizer == "bpe" && !bpe_available())
    throw DataError(
        "--tokenizer bpe: the BPE (sentencepiece) tokenizer is unavailable in this build "
        "(built without libsentencepiece); use --tokenizer byte");
  std::error_code ec;
  if (fs::exists(o.out, ec) && !(fs::is_directory(o.out, ec) && fs::is_empty(o.out, ec)))
    throw DataError(o.out + ": already exists; remove it or choose another --out");

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

  fs::path parent = fs::path(o.out).parent_path();
  if (parent.empty()) parent = ".";
  fs::create_directories(parent);
  std::string pattern =
      (parent / ("." + fs::path(o.out).filename().string() + ".tmp.XXXXXX")).string();
  if (!::mkdtemp(&pattern[0]))
    throw DataError(o.out + ": cannot create a temporary directory next to it");
  TemporaryDirectory work{pattern};
  fs::permissions(work.path,
                  fs::perms(0755));  // mkdtemp's 0700 would hide the data from other users

  std::unique_ptr<Tokenizer> tokenizer;
  if (o.tokenizer == "bpe") {
    const std::string text = work.path + "/bpe_train_text.txt";
    {
      std::ofstream train_text(text, std::ios::binary);
      int64_t line = 0;
      for_each_line(o.input, [&](const std::string& s) {
        if (!split.is_val(line++)) train_text << s;
      });
      if (!train_text.flush()) throw DataError(text + ": write failed");
    }
    train_bpe(text, work.path + "/tokenizer", o.vocab);
    fs::remove(text);
    tokenizer = make_tokenizer(work.path + "/tokenizer.model");
  } else {
    tokenizer = make_tokenizer("byte");
  }

  const bool wide = tokenizer->vocab_size() > 65536;
  ShardWriter train(work.path, "train", o.shard_tokens, wide),
      val(work.path, "val", o.shard_tokens, wide);
  int64_t line = 0;
  for_each_line(o.input, [&](const std::string& s) {
    (split.is_val(line++) ? val : train).add(tokenizer->encode(s));
  });
  auto train_shards = train.finish();
  auto val_shards = val.finish();

  if (fs::exists(o.out)) fs::remove(o.out);  // the empty directory checked above
  fs::rename(work.path, o.out);
  work.path.clear();

  const char* width = wide ? "uint32" : "uint16";
  for (const auto& shards : {train_shards, val_shards})
    for (const auto& shard : shards)
      std::cout << "wrote " << o.out << "/" << shard.first << ": " << shard.second << " tokens ("
                << width << ")\n";
  std::string tokenizer_value = "byte";
  if (o.tokenizer == "bpe") {
    tokenizer_value = o.out + "/tokenizer.model";
    std::cout << "wrote " << tokenizer_value << ": sentencepiece BPE, vocab "
              << tokenizer->vocab_size() << "\n";
    std::cout << "wrote " << o.out << "/tokenizer.vocab\n";
  }
  std::cout << "use: data.train=" << o.out << "/train_*.bin data.val=" << o.out
            << "/val_*.bin data.tokenizer=" << tokenizer_value << std::endl;
}

}  // namespace

int run_prepare(const std::vector<std::string>& args) {
  for (const std::string& a : args)
    if (a == "--help" || a == "-h") {
      std::cout << kUsage << "\n";
      return 0;
    }
  try {
    prepare(parse_options(args));
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "zerotrain prepare: " << e.what() << "; " << kUsage << std::endl;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "zerotrain prepare: " << e.what() << std::endl;
    return 1;
  }
}

}  // namespace zt
