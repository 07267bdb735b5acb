// A token shard (either width) through read_shard, with GPT-2's vocabulary size.
#include "data/shard.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/support/parse_outcome.h"
#include "fuzz/support/scratch_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = zt::fuzz::write_scratch("shard.bin", data, size);
  zt::fuzz::parse_or_reject([&] { (void)zt::read_shard(path, 50257); });
  return 0;
}
