// An llm.c model file (`train --init-from`, `eval`) through read_llmc_model,
// for the seed model's shape (fuzz/support/seed_model.h).
#include "train/io/llmc_model_file.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/support/parse_outcome.h"
#include "fuzz/support/scratch_file.h"
#include "fuzz/support/seed_model.h"
#include "model/param_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const zt::ParamTable table(zt::fuzz::seed_model());
  const std::string path = zt::fuzz::write_scratch("model.bin", data, size);
  zt::fuzz::parse_or_reject([&] { (void)zt::read_llmc_model(path, table); });
  return 0;
}
