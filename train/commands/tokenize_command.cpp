// `zerotrain tokenize`: standard input through a tokenizer, the quick way to
// see what it does. Text to ids (whitespace-separated, one line), ids back to
// the exact bytes with --decode, or one "id<TAB>piece" line per token.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "data/input/input_scalar.h"
#include "data/shard.h"
#include "data/tokenizer.h"
#include "train/cli/command_registry.h"
#include "train/cli/commands.h"

namespace zt {
namespace {

// The command reads all of its input at once; corpora go through `prepare`.
constexpr size_t kMaxInputBytes = size_t(1) << 30;

std::string read_stdin() {
  std::string data;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, stdin)) > 0) {
    data.append(buffer, n);
    if (data.size() > kMaxInputBytes)
      throw DataError(
          "tokenize: standard input exceeds 1 GiB; use `zerotrain prepare` to tokenize corpora");
  }
  if (std::ferror(stdin)) throw DataError("tokenize: cannot read standard input");
  return data;
}

std::vector<int> parse_ids(const std::string& text) {
  std::vector<int> ids;
  size_t i = 0, word = 0;
  auto space = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
  while (i < text.size()) {
    if (space(text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && !space(text[j])) ++j;
    ++word;
    const std::string w = text.substr(i, j - i);
    uint64_t v = 0;
    if (w.find_first_not_of("0123456789") != std::string::npos || !parse_uint64(w, v) ||
        v > 0x7FFFFFFF)
      throw DataError("tokenize --decode: standard input word " + std::to_string(word) + " (" +
                      quote_value(w) +
                      ") is not a token id (expected a decimal integer in [0, 2147483647])");
    ids.push_back(int(v));
    i = j;
  }
  return ids;
}

void write_stdout(const std::string& bytes) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout))
    throw DataError("tokenize: cannot write standard output");
}

}  // namespace

int run_tokenize_command(const std::vector<std::string>& args) {
  const CliArgs f = command_args("tokenize", args);
  if (f.has("--decode") && (f.has("--eot") || f.has("--pieces")))
    f.fail("--decode reads ids; --eot and --pieces apply to encoding");
  std::unique_ptr<Tokenizer> tokenizer = make_tokenizer(f.get("--tokenizer"));
  const std::string input = read_stdin();
  if (f.has("--decode")) {
    write_stdout(tokenizer->decode(parse_ids(input)));
    return 0;
  }
  std::vector<int> ids;
  if (f.has("--eot")) {
    if (tokenizer->eot_id() < 0)
      f.fail("--eot: the " + tokenizer->name() + " tokenizer has no end-of-text token");
    ids.push_back(tokenizer->eot_id());
  }
  const std::vector<int> text_ids = tokenizer->encode(input);
  ids.insert(ids.end(), text_ids.begin(), text_ids.end());
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (f.has("--pieces")) out += std::to_string(ids[i]) + "\t" + tokenizer->piece(ids[i]) + "\n";
    else out += (i ? " " : "") + std::to_string(ids[i]);
  }
  if (!f.has("--pieces")) out += "\n";
  write_stdout(out);
  return 0;
}

}  // namespace zt
