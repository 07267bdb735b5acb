// `zerotrain tokenize --decode --tokenizer byte`: the input is the command's
// standard input (a list of token ids); its output goes to /dev/null.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz/support/parse_outcome.h"
#include "fuzz/support/scratch_file.h"
#include "train/cli/commands.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool stdout_silenced = std::freopen("/dev/null", "w", stdout) != nullptr;
  if (!stdout_silenced) std::abort();
  const std::string path = zt::fuzz::write_scratch("ids.txt", data, size);
  if (!std::freopen(path.c_str(), "rb", stdin)) std::abort();
  zt::fuzz::parse_or_reject([&] {
    (void)zt::run_tokenize_command({"--decode", "--tokenizer", "byte"});
  });
  return 0;
}
