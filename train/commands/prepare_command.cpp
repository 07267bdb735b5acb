// `zerotrain prepare`: the command line; the preparation itself is data/prepare.
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "data/interruption.h"
#include "data/prepare.h"
#include "train/cli/command_registry.h"
#include "train/cli/commands.h"

namespace zt {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

int run_prepare_command(const std::vector<std::string>& args) {
  const CliArgs f = command_args("prepare", args);
  PrepareOptions o;
  o.input = f.get("--input");
  o.out = f.get("--out");
  o.tokenizer = f.get("--tokenizer");
  if (o.input.empty()) f.fail("--input FILE|DIR|GLOB is required");
  if (o.out.empty()) f.fail("--out DIR is required");
  const bool lines = o.tokenizer == "byte" || o.tokenizer == "bpe";
  const bool gpt2 = o.tokenizer == "gpt2" || ends_with(o.tokenizer, ".tiktoken");
  if (!lines && !gpt2)
    f.fail("--tokenizer must be byte, bpe, gpt2 or a .tiktoken file, got '" + o.tokenizer + "'");
  if (o.tokenizer == "bpe") {
    if (!f.has("--vocab")) f.fail("--tokenizer bpe needs --vocab N");
    o.vocab = int(f.get_int("--vocab", 0, 1, INT32_MAX));
  } else if (f.has("--vocab") && !(o.tokenizer == "byte" && f.get("--vocab") == "256")) {
    f.fail("--vocab applies to --tokenizer bpe (byte has 256, gpt2 50257), got --vocab " +
           f.get("--vocab"));
  }
  if (!gpt2 && (f.has("--documents") || f.has("--threads")))
    f.fail("--documents and --threads apply to --tokenizer gpt2");
  o.documents = f.get("--documents", "file");
  if (o.documents != "file" && o.documents != "paragraphs")
    f.fail("--documents must be file or paragraphs, got '" + o.documents + "'");
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  o.threads = int(f.get_int("--threads", cores, 1, 1024));
  o.val_fraction = f.get_double("--val-fraction", 0.05, open_between(0, 1, false));
  o.shard_tokens = f.get_int("--shard-tokens", 100000000, 1, INT32_MAX);
  while (o.out.size() > 1 && o.out.back() == '/') o.out.pop_back();
  // Interrupted: the partial output is gone once prepare_corpus has unwound.
  const InterruptScope interrupts;
  try {
    prepare_corpus(o, std::cout, std::cerr);
  } catch (const Interrupted& e) {
    std::fprintf(stderr, "zerotrain: prepare: %s; %s was not written\n", e.what(), o.out.c_str());
    return 128 + e.signal;
  }
  return 0;
}

}  // namespace zt
