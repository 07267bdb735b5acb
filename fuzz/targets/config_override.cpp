// --set overrides through load_config: each input line is one
// "section.key=value", applied in order over a fixed, valid base config.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/support/parse_outcome.h"
#include "fuzz/support/scratch_file.h"
#include "train/config/config.h"

namespace {

const char kBaseConfig[] =
    "model:\n  n_layer: 2\n  n_head: 2\n  n_embd: 64\n  vocab_size: 256\n  seq_len: 32\n"
    "data:\n  tokenizer: byte\n"
    "train:\n  steps: 10\n  micro_batch: 2\n  global_batch_tokens: 128\n"
    "zero:\n  stage: 2\n";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string base = zt::fuzz::write_scratch("base.yaml", kBaseConfig);
  std::vector<std::string> overrides;
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (size_t pos = 0; pos <= text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    overrides.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  zt::fuzz::parse_or_reject([&] {
    const zt::Config c = zt::load_config(base, overrides);
    (void)zt::config_to_yaml(c);
    zt::validate_for_world(c, 2);
  });
  return 0;
}
