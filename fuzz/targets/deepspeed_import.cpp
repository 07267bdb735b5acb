// A ds_config (Hjson) imported as `train --deepspeed` and `plan --deepspeed`
// import it (train/commands/planned_config.cpp): over a default config, for two
// ranks, then the config and world checks that follow the import.
#include "train/deepspeed/deepspeed_import.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/support/parse_outcome.h"
#include "fuzz/support/scratch_file.h"
#include "train/config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = zt::fuzz::write_scratch("ds_config.json", data, size);
  zt::fuzz::parse_or_reject([&] {
    zt::Config c;
    c.source = "fuzz.yaml";
    std::vector<std::string> warnings;
    std::string dtype;
    zt::apply_deepspeed_config(path, c, warnings, 2, &dtype);
    zt::validate_config(c);
    zt::validate_for_world(c, 2);
  });
  return 0;
}
