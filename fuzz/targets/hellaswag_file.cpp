// HellaSwag JSONL through read_hellaswag (`eval --hellaswag`, train.hellaswag_file).
#include "data/hellaswag_file.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/support/parse_outcome.h"
#include "fuzz/support/scratch_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = zt::fuzz::write_scratch("hellaswag_val.jsonl", data, size);
  zt::fuzz::parse_or_reject([&] { (void)zt::read_hellaswag(path); });
  return 0;
}
